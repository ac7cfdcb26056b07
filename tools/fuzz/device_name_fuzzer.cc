// Device names ("/job:worker/replica:0/task:1/device:GPU:3", "gpu:0", ...),
// as users write them in device lists and as peers send them. An accepted
// name prints canonically, and the canonical form parses back to it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "devices/device_name.h"
#include "devices/dtype.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  auto name = devices::DeviceName::Parse(input);
  if (name.ok()) {
    FUZZ_CHECK(name->Validate().ok(), "Parse accepted an invalid name");
    const std::string text = name->ToString();
    auto again = devices::DeviceName::Parse(text);
    FUZZ_CHECK(again.ok(), "ToString gave '%s', which does not parse",
               text.c_str());
    FUZZ_CHECK(*again == *name, "'%s' parses to another name", text.c_str());
    auto full = devices::DeviceName::Canonicalize(
        input, "/job:localhost/replica:0/task:0");
    if (full.ok()) {
      auto parsed = devices::DeviceName::Parse(*full);
      FUZZ_CHECK(parsed.ok() && parsed->IsCompleteName(),
                 "Canonicalize gave '%s'", full->c_str());
    }
  }
  auto dtype = devices::ParseDType(input);
  if (dtype.ok()) {
    auto again = devices::ParseDType(devices::DTypeName(*dtype));
    FUZZ_CHECK(again.ok() && *again == *dtype, "dtype name round trip");
  }
  return 0;
}

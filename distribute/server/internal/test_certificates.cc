#include "distribute/server/internal/test_certificates.h"

#include <cstdlib>
#include <fstream>

namespace distribute {
namespace server_internal {
namespace {

constexpr char kKey[] = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgvWMVaUJAJgGF9o+1
mqgAllQ+PM6YPfmcM90DqikqbmehRANCAATCI6iT3SXAOGSF1LDTLqdNsvQH2aNn
HQuEogaaPfYh6Q5vz8NCYqzDDFJK3mmzOfnLoQEtwmRiZPdWELMtMYl0
-----END PRIVATE KEY-----
)pem";
constexpr char kCert[] = R"pem(-----BEGIN CERTIFICATE-----
MIIBljCCAT2gAwIBAgICEAAwCgYIKoZIzj0EAwIwFDESMBAGA1UEAwwJbG9jYWxo
b3N0MCAXDTAwMDEwMTAwMDAwMFoYDzIxMDAwMTAxMDAwMDAwWjAUMRIwEAYDVQQD
DAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATCI6iT3SXAOGSF
1LDTLqdNsvQH2aNnHQuEogaaPfYh6Q5vz8NCYqzDDFJK3mmzOfnLoQEtwmRiZPdW
ELMtMYl0o30wezAPBgNVHRMBAf8EBTADAQH/MBoGA1UdEQQTMBGCCWxvY2FsaG9z
dIcEfwAAATAOBgNVHQ8BAf8EBAMCAoQwHQYDVR0lBBYwFAYIKwYBBQUHAwEGCCsG
AQUFBwMCMB0GA1UdDgQWBBQnQkno1MwZazzqMrwdzSpjvsguEjAKBggqhkjOPQQD
AgNHADBEAiBedyJ/c4Ds33KZPtiNdtEqwagNSduQ6B/rbc1L0O/kXgIgBXzyvgP6
oZhpeOWkJnskNemGw4I82b687G+AoCKXmP0=
-----END CERTIFICATE-----
)pem";
constexpr char kUntrustedKey[] = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgXfQxvmSrZB1czSxa
BX8RC4KbCxrxqK99Y8/dnuGW39mhRANCAAQuHI4zbvWdowm1xg94FfZQ1N0WvpP6
tBWcrBM9GgZnTfKgj2XpXf60/mVCa5NH7gTTwSttcvIckq+A1TEM0B8k
-----END PRIVATE KEY-----
)pem";
constexpr char kUntrustedCert[] = R"pem(-----BEGIN CERTIFICATE-----
MIIBrDCCAVGgAwIBAgICIAAwCgYIKoZIzj0EAwIwHjEcMBoGA1UEAwwTdW50cnVz
dGVkIHRlc3QgcGVlcjAgFw0wMDAxMDEwMDAwMDBaGA8yMTAwMDEwMTAwMDAwMFow
HjEcMBoGA1UEAwwTdW50cnVzdGVkIHRlc3QgcGVlcjBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABC4cjjNu9Z2jCbXGD3gV9lDU3Ra+k/q0FZysEz0aBmdN8qCPZeld
/rT+ZUJrk0fuBNPBK21y8hySr4DVMQzQHySjfTB7MA8GA1UdEwEB/wQFMAMBAf8w
GgYDVR0RBBMwEYIJbG9jYWxob3N0hwR/AAABMA4GA1UdDwEB/wQEAwIChDAdBgNV
HSUEFjAUBggrBgEFBQcDAQYIKwYBBQUHAwIwHQYDVR0OBBYEFGPBuTpZf30xe/43
rGDkGQC0aGh6MAoGCCqGSM49BAMCA0kAMEYCIQCDKqlFUVSqRIDGRk04XpFxrsYo
j8NNLNtT+SkeLmqYwgIhAKzmvUHO5P3YFKpyhOPV8u6mENTO6ue6tH4KfOp0LlZW
-----END CERTIFICATE-----
)pem";

std::string WriteFile(const std::string& name, const char* contents) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

}  // namespace

TlsOptions TestTlsFiles::Mutual() const {
  TlsOptions tls;
  tls.cert_file = cert;
  tls.key_file = key;
  tls.ca_file = cert;
  return tls;
}

TlsOptions TestTlsFiles::Outsider() const {
  TlsOptions tls;
  tls.cert_file = untrusted_cert;
  tls.key_file = untrusted_key;
  tls.ca_file = cert;
  return tls;
}

TestTlsFiles WriteTestTlsFiles() {
  TestTlsFiles files;
  files.cert = WriteFile("tls_test_cert.pem", kCert);
  files.key = WriteFile("tls_test_key.pem", kKey);
  files.untrusted_cert =
      WriteFile("tls_test_untrusted_cert.pem", kUntrustedCert);
  files.untrusted_key = WriteFile("tls_test_untrusted_key.pem", kUntrustedKey);
  return files;
}

}  // namespace server_internal
}  // namespace distribute

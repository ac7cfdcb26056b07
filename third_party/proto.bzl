"""C++ code generation for .proto files with the system's protoc and
grpc_cpp_plugin (Debian's protobuf-compiler and protobuf-compiler-grpc).

    load("//third_party:proto.bzl", "cc_proto_library", "cc_grpc_library")

    cc_proto_library(name = "topology_cc_proto", srcs = ["topology.proto"])
    cc_grpc_library(
        name = "service_cc_grpc",
        srcs = ["service.proto"],
        deps = [":service_cc_proto"],
    )

Imports are resolved from the workspace root (`import "simulator/x.proto";`)
and from /usr/include for the well-known types. The generated headers are
included by their workspace path: `#include "simulator/topology.pb.h"`.
"""

def _proto_sources(name, srcs, deps, visibility):
    """A filegroup of these sources plus those of every proto dependency.

    It has the library's visibility, so that packages allowed to use the
    library may also import its .proto files.
    """
    native.filegroup(
        name = name + "_proto_sources",
        srcs = srcs + [d + "_proto_sources" for d in deps],
        visibility = visibility,
    )
    return ":" + name + "_proto_sources"

def cc_proto_library(name, srcs, deps = [], visibility = None, **kwargs):
    """A cc_library with the generated message classes of `srcs`.

    Args:
      name: the target's name.
      srcs: .proto files of this package.
      deps: other cc_proto_library targets whose .proto files are imported.
      visibility: as for cc_library.
      **kwargs: passed on to the cc_library.
    """
    pkg = native.package_name()
    prefix = pkg + "/" if pkg else ""
    bases = [s[:-len(".proto")] for s in srcs]
    outs = [b + ".pb.h" for b in bases] + [b + ".pb.cc" for b in bases]
    all_sources = _proto_sources(name, srcs, deps, visibility)
    native.genrule(
        name = name + "_gen",
        srcs = [all_sources],
        outs = outs,
        cmd = ("protoc -I. -I/usr/include --cpp_out=$(GENDIR) " +
               " ".join([prefix + s for s in srcs])),
        message = "Generating C++ code for " + " ".join(srcs),
    )
    native.cc_library(
        name = name,
        srcs = [b + ".pb.cc" for b in bases],
        hdrs = [b + ".pb.h" for b in bases],
        deps = deps + ["//third_party:protobuf"],
        copts = ["-Wno-unused-parameter"],
        visibility = visibility,
        **kwargs
    )

def cc_grpc_library(name, srcs, deps, visibility = None, **kwargs):
    """A cc_library with the gRPC service stubs of `srcs`.

    Args:
      name: the target's name.
      srcs: .proto files that declare services.
      deps: the cc_proto_library of the same files (and what it needs).
      visibility: as for cc_library.
      **kwargs: passed on to the cc_library.
    """
    pkg = native.package_name()
    prefix = pkg + "/" if pkg else ""
    bases = [s[:-len(".proto")] for s in srcs]
    outs = [b + ".grpc.pb.h" for b in bases] + [b + ".grpc.pb.cc" for b in bases]
    all_sources = _proto_sources(name, srcs, deps, visibility)
    native.genrule(
        name = name + "_gen",
        srcs = [all_sources],
        outs = outs,
        cmd = ("protoc -I. -I/usr/include --grpc_out=$(GENDIR) " +
               "--plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) " +
               " ".join([prefix + s for s in srcs])),
        message = "Generating gRPC stubs for " + " ".join(srcs),
    )
    native.cc_library(
        name = name,
        srcs = [b + ".grpc.pb.cc" for b in bases],
        hdrs = [b + ".grpc.pb.h" for b in bases],
        deps = deps + ["//third_party:grpc"],
        copts = ["-Wno-unused-parameter"],
        visibility = visibility,
        **kwargs
    )

"""Repositories for the system's -dev packages, found offline with pkg-config.

Each library becomes a cc_library whose link flags are read from pkg-config
when the repository is created. Headers live in /usr/include, which the
compiler already searches; Eigen, under /usr/include/eigen3, is wrapped with
its headers so that Bazel tracks them.

If pkg-config or a package is missing, the build stops with the Debian
package to install (tools/bazel installs them all on a fresh machine).
"""

def _pkg_config(ctx, modules, package):
    pkg_config = ctx.which("pkg-config")
    if not pkg_config:
        fail("pkg-config was not found. Install it with `apt-get install pkg-config` " +
             "(tools/bazel does this for you).")
    result = ctx.execute([pkg_config, "--libs"] + modules)
    if result.return_code != 0:
        fail("pkg-config could not find {}: {}\nInstall the Debian package {} " +
             "(tools/bazel installs every package the build needs).".format(
                 " ".join(modules),
                 result.stderr.strip(),
                 package,
             ))
    return result.stdout.strip().split(" ")

def _system_lib_impl(ctx):
    linkopts = []
    for flag in _pkg_config(ctx, ctx.attr.modules, ctx.attr.package):
        if flag and flag not in linkopts or flag.startswith("-Wl,"):
            linkopts.append(flag)
    linkopts += ctx.attr.extra_linkopts
    ctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(ctx.name))
    ctx.file("BUILD", """# Generated from pkg-config: {modules}
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "lib",
    linkopts = {linkopts},
)
""".format(modules = " ".join(ctx.attr.modules), linkopts = repr(linkopts)))

system_lib = repository_rule(
    implementation = _system_lib_impl,
    attrs = {
        "modules": attr.string_list(mandatory = True),
        "package": attr.string(mandatory = True),
        "extra_linkopts": attr.string_list(),
    },
    local = True,
)

_ABSL_MODULES = [
    "absl_status",
    "absl_statusor",
    "absl_strings",
    "absl_str_format",
    "absl_synchronization",
    "absl_time",
    "absl_hash",
    "absl_raw_hash_set",
    "absl_random_random",
    "absl_flags",
    "absl_flags_parse",
    "absl_flags_usage",
    "absl_cord",
    "absl_log_severity",
    "absl_failure_signal_handler",
    "absl_symbolize",
    "absl_stacktrace",
]

def system_library_repositories():
    system_lib(
        name = "system_absl",
        modules = _ABSL_MODULES,
        package = "libabsl-dev",
    )
    system_lib(
        name = "system_protobuf",
        modules = ["protobuf"],
        package = "libprotobuf-dev",
    )
    system_lib(
        name = "system_grpc",
        modules = ["grpc++"],
        package = "libgrpc++-dev",
    )
    # OpenSSL (libssl, libcrypto): the one gRPC links, for the grpc+tcp data
    # plane's TLS.
    system_lib(
        name = "system_openssl",
        modules = ["openssl"],
        package = "libssl-dev",
    )
    system_lib(
        name = "system_gtest",
        modules = ["gmock", "gtest"],
        package = "libgmock-dev libgtest-dev",
        extra_linkopts = ["-pthread"],
    )
    system_lib(
        name = "system_gtest_main",
        modules = ["gmock_main"],
        package = "libgmock-dev",
    )
    system_lib(
        name = "system_benchmark",
        modules = ["benchmark"],
        package = "libbenchmark-dev",
        extra_linkopts = ["-pthread"],
    )
    native.new_local_repository(
        name = "system_eigen",
        path = "/usr/include/eigen3",
        build_file_content = """
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "lib",
    hdrs = glob(["Eigen/**", "unsupported/Eigen/**"]),
    includes = ["."],
    defines = ["EIGEN_MPL2_ONLY"],
)
""",
    )

    # Header-only: JSON for Modern C++ (nlohmann-json3-dev) and CLI11
    # (libcli11-dev), both from /usr/include.
    native.new_local_repository(
        name = "system_nlohmann_json",
        path = "/usr/include",
        build_file_content = """
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "lib",
    hdrs = glob(["nlohmann/**"]),
    includes = ["."],
)
""",
    )
    native.new_local_repository(
        name = "system_cli11",
        path = "/usr/include",
        build_file_content = """
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "lib",
    hdrs = glob(["CLI/**"]),
    includes = ["."],
)
""",
    )

def _optional_lib_impl(ctx):
    """A library only some targets need (comparison benchmarks): when it is
    missing, the repository still loads, and its target is marked
    incompatible, so `bazel build //...` skips what uses it and building such
    a target by name says why."""
    ctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(ctx.name))
    found = ctx.path(ctx.attr.marker).exists
    linkopts = []
    hdrs = "[]"
    includes = []
    if found and ctx.attr.modules:
        pkg_config = ctx.which("pkg-config")
        result = ctx.execute([pkg_config, "--libs"] + ctx.attr.modules) if pkg_config else None
        if not result or result.return_code != 0:
            found = False
        else:
            linkopts = [f for f in result.stdout.strip().split(" ") if f]
            cflags = ctx.execute([pkg_config, "--cflags-only-I"] + ctx.attr.modules)
            dirs = [f[2:] for f in cflags.stdout.strip().split(" ") if f.startswith("-I")]
            for i, d in enumerate(dirs):
                ctx.symlink(d, "include{}".format(i))
                includes.append("include{}".format(i))
            if includes:
                hdrs = "glob([{}])".format(", ".join(['"{}/**/*.h"'.format(i) for i in includes]))
    linkopts += ctx.attr.extra_linkopts
    if found:
        body = """cc_library(
    name = "lib",
    hdrs = {hdrs},
    includes = {includes},
    linkopts = {linkopts},
)
""".format(hdrs = hdrs, includes = repr(includes), linkopts = repr(linkopts))
    else:
        body = """# {marker} is missing: install the Debian package {package}.
cc_library(
    name = "lib",
    target_compatible_with = ["@platforms//:incompatible"],
)
""".format(marker = ctx.attr.marker, package = ctx.attr.package)
    ctx.file("BUILD", "package(default_visibility = [\"//visibility:public\"])\n\n" + body)

optional_system_lib = repository_rule(
    implementation = _optional_lib_impl,
    attrs = {
        "marker": attr.string(mandatory = True),
        "modules": attr.string_list(),
        "package": attr.string(mandatory = True),
        "extra_linkopts": attr.string_list(),
    },
    local = True,
)

def optional_library_repositories():
    """Libraries for the side-by-side comparison benchmarks only."""
    optional_system_lib(
        name = "system_gloo",
        marker = "/usr/include/gloo/config.h",
        package = "libgloo-dev",
        extra_linkopts = ["-L/usr/lib", "-lgloo", "-pthread"],
    )
    optional_system_lib(
        name = "system_mpi",
        marker = "/usr/bin/mpirun",
        modules = ["ompi-c"],
        package = "libopenmpi-dev openmpi-bin",
    )

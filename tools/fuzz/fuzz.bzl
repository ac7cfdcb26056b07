"""distsim_fuzz_target: a libFuzzer target and the test that replays its corpus.

    distsim_fuzz_target(name = "hostlist_fuzzer", srcs = [...], deps = [...])

makes
  :hostlist_fuzzer              a libFuzzer binary under --config=fuzz (clang,
                                -fsanitize=fuzzer,address,undefined); without
                                it, a driver that runs the files and folders
                                named on its command line through the target
  :hostlist_fuzzer_replay_test  runs every file of corpus/hostlist/ through
                                the target: a normal `bazel test` replays each
                                corpus, every input that ever found a bug with
                                it.
The target's source defines LLVMFuzzerTestOneInput and aborts (a crash) when
an invariant it checks does not hold.
"""

def distsim_fuzz_target(name, srcs, deps, corpus):
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + select({
            "//tools/fuzz:fuzzing": [],
            "//conditions:default": ["//tools/fuzz:replay_main"],
        }),
        linkopts = select({
            "//tools/fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
    )
    native.cc_test(
        name = name + "_replay_test",
        size = "small",
        srcs = srcs,
        deps = deps + ["//tools/fuzz:replay_main"],
        data = native.glob(["corpus/" + corpus + "/**"]),
        args = ["$(location //tools/fuzz:corpus/" + corpus + "/README)"],
    )

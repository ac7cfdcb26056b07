#!/bin/sh
# A stand-in for nvidia-smi in nvidia_smi_test: what it does is chosen by
# FAKE_SMI_MODE. It insists on the one argument the count passes.
if [ "$#" -ne 1 ] || [ "$1" != "--list-gpus" ]; then
  echo "fake nvidia-smi: expected --list-gpus, got: $*" >&2
  exit 2
fi
case "$FAKE_SMI_MODE" in
  list)
    echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f0c8c66-0000-0000-0000-000000000000)"
    echo "  MIG 1g.10gb     Device  0: (UUID: MIG-2a3b0000-0000-0000-0000-000000000000)"
    echo "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-5f0c8c66-0000-0000-0000-000000000001)"
    echo "GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-5f0c8c66-0000-0000-0000-000000000002)"
    ;;
  none)
    ;;
  fail)
    echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    exit 9
    ;;
  hang)
    exec sleep 60
    ;;
  linger)
    # Lists one GPU and exits, leaving a background process that holds
    # the output open.
    echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f0c8c66-0000-0000-0000-000000000000)"
    sleep 60 &
    ;;
  flood)
    # Never stops writing.
    yes "GPU 0: NVIDIA H100 80GB HBM3"
    ;;
  *)
    echo "fake nvidia-smi: unknown FAKE_SMI_MODE '$FAKE_SMI_MODE'" >&2
    exit 3
    ;;
esac

#!/usr/bin/env bash
# same_outputs.py on the lent GPU machine: proof that a refactor changed no behaviour on device
# memory too. Builds the base commit's gdrbench and this tree's, both with jobs/gpu/device_build.sh
# against the same UCX, runs same_outputs.py's runs with each (it keeps them there: no h5py on
# that machine), and tars them into $OUT/same_outputs_gpu.tgz to be compared here.
#
#   here:    rm -rf .device/base && mkdir -p .device/base &&
#            git archive BASE -- . ':!results/archive' | tar -x -C .device/base
#            jobs/gpu/make_bundle.sh
#   there:   bash jobs/dev/same_outputs_gpu.sh build && bash jobs/dev/same_outputs_gpu.sh run
#            (carry .device/gpu and .device/base)
#   here:    mkdir -p /tmp/so && tar -xzf same_outputs_gpu.tgz -C /tmp/so &&
#            jobs/dev/same_outputs.py --compare /tmp/so/keep /tmp/so-old/gdrbench /tmp/so-new/gdrbench
#
# build: both at once (half the cores each), logs in /tmp/so-build-{old,new}.log. run: the runs.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
base=$root/.device/base
old=/tmp/so-old new=/tmp/so-new
case ${1:-} in
  build)
    [ -f "$base/CMakeLists.txt" ] || { echo "same_outputs_gpu: no base tree in $base (see the header)" >&2; exit 2; }
    # The base tree's own device_build.sh finds the bundle beside it.
    mkdir -p "$base/.device" && ln -sfn "$root/.device/gpu" "$base/.device/gpu"
    # One unpack of the carried UCX first, so the two builds below do not race to make it.
    # This tree's build goes where jobs/gpu/gpu_suite.sh looks (build-device), with the targets
    # its gpu tests run, so a `gpu_suite.sh tests` after this reuses it.
    mkdir -p /tmp/so-out-new /tmp/so-out-old
    GDR_DEVICE_TARGETS="gdrbench gdr_dmabuf_probe" OUT=/tmp/so-out-new \
      bash "$root/jobs/gpu/device_build.sh" "$root/build-device" >/tmp/so-build-new.log 2>&1 &
    pid_new=$!
    sleep 20
    GDR_COMMIT=${GDR_BASE_COMMIT:-base} GDR_DEVICE_TARGETS=gdrbench OUT=/tmp/so-out-old \
      bash "$base/jobs/gpu/device_build.sh" "$old" >/tmp/so-build-old.log 2>&1
    rc_old=$?
    wait $pid_new
    rc_new=$?
    for f in /tmp/so-build-old.log /tmp/so-out-old/build.log /tmp/so-build-new.log /tmp/so-out-new/build.log; do
      echo "== $f"; tail -n 5 "$f" 2>/dev/null
    done
    ln -sfn "$root/build-device" $new
    [ $rc_old -eq 0 ] && [ $rc_new -eq 0 ] && [ -x $old/gdrbench ] && [ -x $new/gdrbench ] ;;
  run)
    [ -x $old/gdrbench ] && [ -x $new/gdrbench ] || { echo "same_outputs_gpu: build first" >&2; exit 2; }
    . "$root/jobs/gpu/ucx_env.sh" "$new"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    rm -rf /tmp/so-keep
    python3 "$root/jobs/dev/same_outputs.py" $old/gdrbench $new/gdrbench --keep /tmp/so-keep
    rc=$?
    tar -C /tmp -czf "${OUT:-/tmp}/same_outputs_gpu.tgz" --transform 's,^so-keep,keep,' so-keep
    # 3: kept for comparing elsewhere (no h5py here); anything else is the script's own verdict.
    [ $rc -eq 3 ] || [ $rc -eq 0 ] ;;
  *) echo "usage: jobs/dev/same_outputs_gpu.sh build|run" >&2; exit 2 ;;
esac

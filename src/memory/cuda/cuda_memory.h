// The CUDA memory kind's few entry points outside the MemoryOps table, for
// the cuda folder's own sources: the layers above reach the kind only
// through src/memory/*.h (its stream: MemoryOps::work_stream()).
// Compiled only when GDR_HAVE_CUDA is defined (src/memory/cuda/CMakeLists.txt).
#pragma once

#include <string>

namespace gdr::cuda {

// Which GPU this rank uses: `device` (--device, -1 for none) or else
// local_rank mod the device count. `max_local_ranks` is the largest number
// of ranks on any node (the same on every rank), so that every rank agrees
// whether ranks share a GPU. `who` names this rank in errors ("rank 3 (node07)").
// Without this call the launcher's local-rank variable is used.
void set_cuda_device_choice(int device, int local_rank, int max_local_ranks,
                            const std::string& who);

// The ordinal this rank uses, made current on the calling thread.
// Throws UsageError when there is no usable device.
int current_device();
// Whether two ranks of one node land on the same GPU (NCCL refuses that).
bool ranks_share_gpu();
// PCI bus id of this rank's GPU ("0000:3B:00.0"), "" when CUDA cannot say.
std::string pci_bus_id();
// "0000:3B:00.0 NVIDIA H200": bus id and model of this rank's GPU, as
// /ranks/gpu stores it; "" when CUDA cannot say.
std::string gpu_label();
// "rank 3 (node07)", for error messages of code that works on the GPU.
const std::string& who();

}  // namespace gdr::cuda

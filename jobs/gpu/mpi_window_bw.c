/* The MPI's own bandwidth loop, the peer of `gdrbench -T mpi -t bw`: osu_bw's
 * shape on MPI alone (no gdrbench code). Rank 0 posts a window of MPI_Isend
 * of one buffer, MPI_Waitall, then MPI_Recv of a 4-byte ack; rank 1 posts the
 * window's MPI_Irecv into one buffer, MPI_Waitall, then MPI_Send of the ack.
 * The timed iterations run back to back after the skipped ones, as osu_bw.
 * Prints one line:
 *   "mpi_window_bw SIZE B GB/s: G (N iterations of W messages, MEM memory)".
 *
 *   mpicc -O2 -I/usr/local/cuda/include mpi_window_bw.c -L/usr/local/cuda/lib64 -lcudart
 *   mpirun -np 2 ./a.out [SIZE [ITERS [host|device [WINDOW]]]]
 *     (defaults 1 MiB, OSU's 20 after 2 skipped (100 and 10 up to 8 KiB), host memory, 64)
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* alloc(long bytes, int host, int rank) {
  void* p = NULL;
  cudaError_t e = host ? cudaSuccess : cudaMalloc(&p, (size_t)bytes);
  if (host) {
    p = malloc((size_t)bytes);
    if (p) memset(p, rank + 1, (size_t)bytes); /* touched: no first-touch faults in the timed loop */
  }
  if (e != cudaSuccess || !p) {
    fprintf(stderr, "mpi_window_bw rank %d: allocating %ld B of %s memory failed: %s\n", rank, bytes,
            host ? "host" : "device", host ? "malloc" : cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
  long iters = argc > 2 ? atol(argv[2]) : (bytes <= 8192 ? 100 : 20), skip = bytes <= 8192 ? 10 : 2;
  const int host = !(argc > 3 && argv[3][0] == 'd');
  int window = argc > 4 ? atoi(argv[4]) : 64;
  if (size != 2 || bytes <= 0 || iters <= 0 || window <= 0 || window > 1024 || bytes > 1L << 30) {
    if (rank == 0) fprintf(stderr, "mpi_window_bw: needs 2 ranks, 0 < SIZE <= 1 GiB, ITERS > 0, 0 < WINDOW <= 1024\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char* buf = alloc(bytes, host, rank);
  int ack = 0;
  MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)window);
  const int peer = 1 - rank;
  double t0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (long i = -skip; i < iters; ++i) {
    if (i == 0) t0 = MPI_Wtime();
    for (int w = 0; w < window; ++w) {
      if (rank == 0) MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, 100, MPI_COMM_WORLD, &reqs[w]);
      else MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, 100, MPI_COMM_WORLD, &reqs[w]);
    }
    MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
    if (rank == 0) MPI_Recv(&ack, 1, MPI_INT, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(&ack, 1, MPI_INT, peer, 101, MPI_COMM_WORLD);
  }
  const double s = MPI_Wtime() - t0;
  if (rank == 0)
    printf("mpi_window_bw %ld B GB/s: %.3f (%ld iterations of %d messages, %s memory)\n", bytes,
           (double)bytes * (double)window * (double)iters / s / 1e9, iters, window, host ? "host" : "device");
  free(reqs);
  if (host) free(buf); else cudaFree(buf);
  MPI_Finalize();
  return 0;
}

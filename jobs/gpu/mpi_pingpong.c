/* The MPI's own ping-pong on device memory, the floor under `gdrbench -T mpi`
 * latency: rank 0 MPI_Send then MPI_Recv, rank 1 the mirror (osu_latency's
 * loop, blocking calls, no gdrbench code), each round trip timed alone.
 * Prints one line: "mpi_pingpong SIZE B one-way us: median M mean A (N round trips)".
 *
 *   mpicc -O2 -I/usr/local/cuda/include mpi_pingpong.c -L/usr/local/cuda/lib64 -lcudart
 *   mpirun -np 2 ./a.out [SIZE [ITERS [host|device [block|poll|prepost|sendpoll]]]]
 *     (defaults 8 B, 10000 after 1000 warm-up, device memory, block)
 *   block:   MPI_Send / MPI_Recv, as osu_latency
 *   poll:    the same order with MPI_Isend / MPI_Irecv and MPI_Test polling
 *   prepost: gdrbench's latency loop without gdrbench: the receives of 64 round
 *            trips posted before a barrier, then MPI_Isend and MPI_Test polling
 *   sendpoll: blocking MPI_Send, the receive MPI_Irecv polled with MPI_Test (a
 *            receive that keeps its deadline, a send that takes MPI's fast path)
 *   (the two last tell gdrbench's own costs apart from its loop's shape)
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void spin(MPI_Request* r) {
  int done = 0;
  while (!done) MPI_Test(r, &done, MPI_STATUS_IGNORE);
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long bytes = argc > 1 ? atol(argv[1]) : 8, iters = argc > 2 ? atol(argv[2]) : 10000, warm = 1000;
  if (size != 2 || bytes <= 0 || iters <= 0) {
    if (rank == 0) fprintf(stderr, "mpi_pingpong: needs 2 ranks, SIZE > 0, ITERS > 0\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int host = argc > 3 && argv[3][0] == 'h';
  const char* mode = argc > 4 ? argv[4] : "block";
  const int poll = mode[0] == 'p' || mode[0] == 's', prepost = mode[0] == 'p' && mode[1] == 'r';
  const int sendpoll = mode[0] == 's';
  void* buf = host ? malloc((size_t)bytes) : NULL;
  cudaError_t e = host ? cudaSuccess : cudaMalloc(&buf, (size_t)bytes);
  if (e != cudaSuccess || !buf) {
    fprintf(stderr, "mpi_pingpong rank %d: cudaMalloc(%ld): %s\n", rank, bytes, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double* t = malloc(sizeof(double) * (size_t)iters);
  int peer = 1 - rank;
  enum { kBatch = 64 };
  MPI_Request pre[kBatch];
  for (long i = -warm; i < iters; ++i) {
    const int k = (int)((i + warm) % kBatch);
    if (prepost && k == 0) {  /* a batch's receives, then a barrier, as gdrbench does */
      for (int j = 0; j < kBatch; ++j) MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &pre[j]);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    double t0 = MPI_Wtime();
    if (!poll) {
      if (rank == 0) {
        MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      }
    } else {
      MPI_Request r;
      if (rank == 0 && sendpoll) MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      else if (rank == 0) {
        MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r);
        spin(&r);
      }
      if (prepost) spin(&pre[k]);
      else { MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r); spin(&r); }
      if (rank == 1 && sendpoll) MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      else if (rank == 1) {
        MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r);
        spin(&r);
      }
    }
    if (i >= 0) t[i] = (MPI_Wtime() - t0) * 1e6 / 2;
  }
  if (prepost && (iters + warm) % kBatch)  /* the last batch's unused receives */
    for (int j = (int)((iters + warm) % kBatch); j < kBatch; ++j) {
      MPI_Cancel(&pre[j]);
      MPI_Wait(&pre[j], MPI_STATUS_IGNORE);
    }
  if (rank == 0) {
    double sum = 0;
    for (long i = 0; i < iters; ++i) sum += t[i];
    qsort(t, (size_t)iters, sizeof(double), cmp);
    printf("mpi_pingpong %ld B one-way us: median %.3f mean %.3f (%ld round trips, %s memory, %s)\n", bytes,
           t[iters / 2], sum / iters, iters, host ? "host" : "device", mode);
  }
  free(t);
  if (host) free(buf); else cudaFree(buf);
  MPI_Finalize();
  return 0;
}

// v7: row softmax in CUDA C++, called as solve(x, y, M, N) (setup's x, the output y, the config's M, N).
//
// As Triton's v1, each row is read once and written once, held in registers between the passes:
// one warp per row for short rows (N = 256..1024, eight rows per block), one block per row for
// long ones (N = 2048..16384), with 16-byte loads and stores marked streaming (evict-first: every
// byte is touched once). Any other N, or a misaligned tensor, takes a plain three-pass kernel.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

__device__ __forceinline__ float exp4(float4& v, float m) {
  v.x = expf(v.x - m);
  v.y = expf(v.y - m);
  v.z = expf(v.z - m);
  v.w = expf(v.w - m);
  return (v.x + v.y) + (v.z + v.w);
}

__device__ __forceinline__ float4 scale4(float4 v, float r) { return make_float4(v.x * r, v.y * r, v.z * r, v.w * r); }

// One warp per row of 128 * VEC floats; 8 rows per block of 256 threads.
template <int VEC>
__global__ void __launch_bounds__(256) softmax_warp_rows(const float4* __restrict__ x, float4* __restrict__ y, int M) {
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
  if (row >= M) return;
  const float4* xr = x + row * (32 * VEC);
  float4* yr = y + row * (32 * VEC);
  float4 v[VEC];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < VEC; i++) {
    v[i] = __ldcs(xr + i * 32 + lane);
    m = fmaxf(m, max4(v[i]));
  }
  m = warp_max(m);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < VEC; i++) s += exp4(v[i], m);
  const float r = 1.f / warp_sum(s);
#pragma unroll
  for (int i = 0; i < VEC; i++) __stcs(yr + i * 32 + lane, scale4(v[i], r));
}

// The block's reduction of one value per thread: each warp reduces, then warp 0 the warps' results.
template <int THREADS, bool MAX>
__device__ __forceinline__ float block_reduce(float v, float* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = MAX ? warp_max(v) : warp_sum(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < THREADS / 32 ? smem[lane] : (MAX ? -INFINITY : 0.f);
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) smem[32] = v;
  }
  __syncthreads();
  return smem[32];
}

// One block of THREADS per row of THREADS * 4 * VEC floats.
template <int THREADS, int VEC>
__global__ void __launch_bounds__(THREADS) softmax_block_rows(const float4* __restrict__ x, float4* __restrict__ y) {
  __shared__ float red_max[33], red_sum[33];
  const int64_t row = blockIdx.x;
  const float4* xr = x + row * (THREADS * VEC);
  float4* yr = y + row * (THREADS * VEC);
  float4 v[VEC];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < VEC; i++) {
    v[i] = __ldcs(xr + i * THREADS + threadIdx.x);
    m = fmaxf(m, max4(v[i]));
  }
  m = block_reduce<THREADS, true>(m, red_max);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < VEC; i++) s += exp4(v[i], m);
  const float r = 1.f / block_reduce<THREADS, false>(s, red_sum);
#pragma unroll
  for (int i = 0; i < VEC; i++) __stcs(yr + i * THREADS + threadIdx.x, scale4(v[i], r));
}

// Any N: three passes over the row (max, sum, write), 256 threads per row.
__global__ void __launch_bounds__(256) softmax_any(const float* __restrict__ x, float* __restrict__ y, int N) {
  __shared__ float red_max[33], red_sum[33];
  const float* xr = x + (int64_t)blockIdx.x * N;
  float* yr = y + (int64_t)blockIdx.x * N;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < N; i += 256) m = fmaxf(m, xr[i]);
  m = block_reduce<256, true>(m, red_max);
  float s = 0.f;
  for (int i = threadIdx.x; i < N; i += 256) s += expf(xr[i] - m);
  const float r = 1.f / block_reduce<256, false>(s, red_sum);
  for (int i = threadIdx.x; i < N; i += 256) yr[i] = expf(xr[i] - m) * r;
}

extern "C" void solve(const float* x, float* y, int M, int N) {
  const bool vec = N % 4 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)y % 16 == 0;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int warp_blocks = (M + 7) / 8;
  if (!vec || M == 0) {
    if (M > 0) softmax_any<<<M, 256>>>(x, y, N);
  } else if (N == 256) {
    softmax_warp_rows<2><<<warp_blocks, 256>>>(x4, y4, M);
  } else if (N == 512) {
    softmax_warp_rows<4><<<warp_blocks, 256>>>(x4, y4, M);
  } else if (N == 1024) {
    softmax_warp_rows<8><<<warp_blocks, 256>>>(x4, y4, M);
  } else if (N == 2048) {
    softmax_block_rows<256, 2><<<M, 256>>>(x4, y4);
  } else if (N == 4096) {
    softmax_block_rows<512, 2><<<M, 512>>>(x4, y4);
  } else if (N == 8192) {
    softmax_block_rows<1024, 2><<<M, 1024>>>(x4, y4);
  } else if (N == 16384) {
    softmax_block_rows<1024, 4><<<M, 1024>>>(x4, y4);
  } else {
    softmax_any<<<M, 256>>>(x, y, N);
  }
}

// CPU emulation of the CUDA built-ins Troupe's kernels use, so kernels.cu compiles as C++ and runs
// on a machine without a GPU (tests only). Each CUDA thread of a block is a fiber (ucontext); blocks
// run one after another. A fiber runs until it reaches a barrier: __syncthreads waits for every
// live thread of the block, __syncwarp and the shuffles for every thread of its warp. Shuffles
// exchange values through a per-warp slot array double-buffered by barrier generation. A barrier
// that can never be released (divergent __syncthreads, a shuffle after lanes exited, threads of one
// warp at different barriers) aborts the launch with a message instead of hanging: the emulator is
// stricter than hardware there, which is the point.
#pragma once
#include <setjmp.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace emu {
enum State { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };
struct Fiber {
  ucontext_t ctx;  // only to start the fiber on its own stack
  jmp_buf jb;      // switches: _setjmp/_longjmp do not save the signal mask (no system call)
  bool started = false;
  std::vector<char> stack;
  State state = RUNNABLE;
  uint3 idx;
  unsigned lane = 0, warp = 0;
  unsigned warp_gen = 0;  // warp barriers passed
};
inline dim3 g_grid, g_block;
inline uint3 g_block_idx;
inline std::vector<Fiber> g_fibers;
inline Fiber* g_cur = nullptr;
inline jmp_buf g_sched;
inline std::vector<uint64_t> g_slots;  // [warp][2][32]
inline void (*g_body)(void**) = nullptr;
inline void** g_args = nullptr;
inline std::string g_error;

inline void yield_to_scheduler() {
  if (!_setjmp(g_cur->jb)) _longjmp(g_sched, 1);
}

inline void fail(const std::string& msg) {
  if (g_error.empty()) g_error = msg;
}

// A fiber runs one thread of one block, then parks at its yield; the next block (or launch)
// resumes it there to run the next thread with that index: contexts are made once per fiber, not
// per block (getcontext/setcontext are system calls, _setjmp/_longjmp are not).
inline void fiber_main() {
  for (;;) {
    g_body(g_args);
    g_cur->state = DONE;
    if (!_setjmp(g_cur->jb)) _longjmp(g_sched, 1);
  }
}

inline void warp_barrier() {
  g_cur->state = AT_WARP_BARRIER;
  yield_to_scheduler();
  g_cur->warp_gen++;
}

template <class T>
T shfl(T v, unsigned src_lane_of(unsigned lane, unsigned arg), unsigned arg) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "32- or 64-bit shuffles only");
  Fiber* f = g_cur;
  uint64_t* s = &g_slots[(f->warp * 2 + (f->warp_gen & 1)) * 32];
  std::memcpy(&s[f->lane], &v, sizeof(T));
  warp_barrier();
  unsigned src = src_lane_of(f->lane, arg) & 31;
  T r;
  std::memcpy(&r, &s[src], sizeof(T));
  return r;
}
inline unsigned xor_lane(unsigned lane, unsigned m) { return lane ^ m; }
inline unsigned fixed_lane(unsigned, unsigned src) { return src; }

// A launch that failed leaves fibers inside the kernel: they are started afresh next time.
inline std::string abandon(const std::string& error) {
  for (Fiber& f : g_fibers) f.started = false;
  return error;
}

// Runs one launch: every block in turn, each block's threads as fibers.
inline std::string launch(void (*body)(void**), void** args, dim3 grid, dim3 block) {
  g_error.clear();
  unsigned n = block.x * block.y * block.z;
  if (n == 0 || n > 1024) return "bad block size " + std::to_string(n);
  if (n % 32 != 0) return "block size " + std::to_string(n) + " is not a multiple of 32";
  g_grid = grid;
  g_block = block;
  g_body = body;
  g_args = args;
  if (g_fibers.size() < n) {
    g_fibers.resize(n);
    for (Fiber& f : g_fibers) f.started = false;  // moved: start them afresh
  }
  g_slots.assign((n / 32) * 2 * 32, 0ull);
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        g_block_idx = {bx, by, bz};
        for (unsigned i = 0; i < n; i++) {
          Fiber& f = g_fibers[i];
          if (f.stack.empty()) f.stack.resize(128 * 1024);
          f.state = RUNNABLE;
          f.idx = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
          f.lane = i % 32;
          f.warp = i / 32;
          f.warp_gen = 0;
          if (f.started) continue;  // parked at the end of fiber_main's loop
          getcontext(&f.ctx);
          f.ctx.uc_stack.ss_sp = f.stack.data();
          f.ctx.uc_stack.ss_size = f.stack.size();
          f.ctx.uc_link = nullptr;
          makecontext(&f.ctx, fiber_main, 0);
        }
        for (;;) {
          bool ran = false;
          for (unsigned i = 0; i < n; i++) {
            if (g_fibers[i].state != RUNNABLE) continue;
            g_cur = &g_fibers[i];
            if (!_setjmp(g_sched)) {
              if (!g_cur->started) {
                g_cur->started = true;
                setcontext(&g_cur->ctx);
              } else {
                _longjmp(g_cur->jb, 1);
              }
            }
            ran = true;
          }
          if (!g_error.empty()) return abandon(g_error);
          if (ran) continue;
          // nothing runnable: release a barrier, finish, or report a deadlock
          unsigned done = 0, at_block = 0;
          for (unsigned i = 0; i < n; i++) {
            done += g_fibers[i].state == DONE;
            at_block += g_fibers[i].state == AT_BLOCK_BARRIER;
          }
          if (done == n) break;
          bool released = false;
          for (unsigned w = 0; w < n / 32; w++) {
            unsigned at = 0, dn = 0;
            for (unsigned l = 0; l < 32; l++) {
              State s = g_fibers[w * 32 + l].state;
              at += s == AT_WARP_BARRIER;
              dn += s == DONE;
            }
            if (at == 0) continue;
            if (at == 32) {
              for (unsigned l = 0; l < 32; l++) g_fibers[w * 32 + l].state = RUNNABLE;
              released = true;
            } else if (at + dn == 32) {
              return abandon("warp " + std::to_string(w) + " of block (" + std::to_string(bx) +
                             "," + std::to_string(by) + "): shuffle or __syncwarp after " +
                             std::to_string(dn) + " lanes exited");
            }
          }
          if (released) continue;
          if (at_block + done == n && at_block > 0) {
            for (unsigned i = 0; i < n; i++)
              if (g_fibers[i].state == AT_BLOCK_BARRIER) g_fibers[i].state = RUNNABLE;
            continue;
          }
          return abandon("deadlock in block (" + std::to_string(bx) + "," + std::to_string(by) +
                         "): threads wait at different barriers (divergent __syncthreads or warp "
                         "sync)");
        }
      }
  return "";
}
}  // namespace emu

#define threadIdx (emu::g_cur->idx)
#define blockIdx (emu::g_block_idx)
#define blockDim (emu::g_block)
#define gridDim (emu::g_grid)
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__

inline void __syncthreads() {
  emu::g_cur->state = emu::AT_BLOCK_BARRIER;
  emu::yield_to_scheduler();
}
inline void __syncwarp(unsigned = 0xffffffffu) { emu::warp_barrier(); }
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int m) {
  return emu::shfl<T>(v, emu::xor_lane, (unsigned)m);
}
template <class T>
inline T __shfl_sync(unsigned, T v, int src) {
  return emu::shfl<T>(v, emu::fixed_lane, (unsigned)src);
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
template <class T>
inline T atomicAdd(T* p, T v) {  // fibers never preempt each other: a plain add is atomic
  T old = *p;
  *p = v + old;
  return old;
}
inline float atomicMax_f(float* p, float v) {
  float old = *p;
  if (v > old) *p = v;
  return old;
}

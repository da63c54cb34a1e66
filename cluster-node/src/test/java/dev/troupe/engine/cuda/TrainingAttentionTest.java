package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Training attention on cuBLAS ({@link TrainingAttention}) against a scalar reference in double
 * precision: a packed row of three segments of unequal length, GQA (4 query heads on 2 KV heads),
 * with and without Mistral's sliding window; the output and the gradients of q, k and v, with the
 * work memory holding all heads at once, one KV head at a time, and blocks of 5 query rows.
 *
 * <p>K, V and dO are BF16-exact (the products' operands), so the device and the reference multiply
 * the same numbers; Q is FP32 against the device's BF16 copy (as PyTorch's BF16 attention); the
 * device rounds P and dS to BF16 for their products (relative 2⁻⁹ each) and sums in FP32: ‖device −
 * reference‖ / ‖reference‖ ≤ 1e-2 per tensor. A key seen across a segment's boundary, or a masked
 * one leaking into the softmax, moves the result by far more than that.
 */
class TrainingAttentionTest {
  static final int[] SEGMENT_LENGTHS = {9, 4, 14};

  static List<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    for (GpuBackends b : GpuBackends.selected())
      for (int window : new int[] {0, 5}) out.add(Arguments.of(b, window));
    return out;
  }

  static ModelConfig config(int window) {
    ModelConfig c = TinyModels.config(Arch.MISTRAL);
    return window > 0 ? TinyModels.withSlidingWindow(c, window) : c;
  }

  @ParameterizedTest
  @MethodSource("cases")
  void outputAndGradientsMatchAScalarReferenceInEveryWorkLayout(GpuBackends backend, int window) {
    ModelConfig c = config(window);
    int heads = c.numHeads(), kv = c.numKvHeads(), d = c.headDim(), group = heads / kv;
    assertTrue(kv < heads, "GQA");
    int t = 0;
    for (int n : SEGMENT_LENGTHS) t += n;
    int[] segStart = new int[t];
    for (int s = 0, at = 0; s < SEGMENT_LENGTHS.length; at += SEGMENT_LENGTHS[s++])
      for (int i = 0; i < SEGMENT_LENGTHS[s]; i++) segStart[at + i] = at;
    Random r = new Random(17);
    float[] q = new float[t * heads * d]; // fp32, as RoPE leaves it: the products take bf16(q)
    for (int i = 0; i < q.length; i++) q[i] = (float) (1.5 * r.nextGaussian());
    float[] k = bf16Gaussian(r, t * kv * d, 1.5);
    float[] v = bf16Gaussian(r, t * kv * d, 1), dO = bf16Gaussian(r, t * heads * d, 1);
    Reference ref = reference(c, segStart, q, k, v, dO);

    long full = (long) heads * t * t;
    long[] layouts = {full, (long) group * t * t, (long) group * t * 5};
    int[] blocks = {1, kv, kv * ((t + 4) / 5)};
    try (Gpu gpu = backend.open(c, 16)) {
      gpu.loadKernels(KernelSource.generate(c, 16), KernelSource.KERNELS);
      long seg = gpu.alloc(4L * t), qb = bf16(gpu, q);
      long kb = bf16(gpu, k), vb = bf16(gpu, v);
      long dOf = f32(gpu, dO), dOb = bf16(gpu, dO);
      long o32 = gpu.alloc(4L * t * heads * d), dq = gpu.alloc(4L * t * heads * d);
      long dk = gpu.alloc(4L * t * kv * d), dv = gpu.alloc(4L * t * kv * d);
      long s = gpu.alloc(4 * full), p = gpu.alloc(2 * full);
      ByteBuffer ints = ByteBuffer.allocateDirect(4 * t).order(ByteOrder.LITTLE_ENDIAN);
      ints.asIntBuffer().put(segStart);
      gpu.upload(seg, ints);
      for (int i = 0; i < layouts.length; i++) {
        String what = "window " + window + ", " + blocks[i] + " block(s)";
        assertEquals(
            blocks[i], TrainingAttention.plan(kv, group, t, layouts[i]).size(), what + ": plan");
        TrainingAttention att =
            new TrainingAttention(gpu, new TrainingPhases(gpu), c, s, p, layouts[i]);
        att.forward(t, seg, qb, kb, vb, o32);
        att.backward(t, seg, qb, kb, vb, o32, dOf, dOb, dq, dk, dv);
        double eo = CudaTrainerTest.relErr(floats(gpu, o32, t * heads * d), ref.o);
        double eq = CudaTrainerTest.relErr(floats(gpu, dq, t * heads * d), ref.dq);
        double ek = CudaTrainerTest.relErr(floats(gpu, dk, t * kv * d), ref.dk);
        double ev = CudaTrainerTest.relErr(floats(gpu, dv, t * kv * d), ref.dv);
        System.out.printf(
            "%s %s: relative errors o %.2e dq %.2e dk %.2e dv %.2e%n",
            backend, what, eo, eq, ek, ev);
        for (double e : new double[] {eo, eq, ek, ev})
          assertTrue(
              e <= 1e-2, what + ": o, dq, dk, dv errors " + eo + " " + eq + " " + ek + " " + ev);
      }
      for (long ptr : new long[] {seg, qb, kb, vb, dOf, dOb, o32, dq, dk, dv, s, p}) gpu.free(ptr);
    }
  }

  /** Every (KV head, query row) in exactly one block, each block within the work cells. */
  @Test
  void thePlanCoversEveryHeadAndRowOnceWithinItsCells() {
    int kv = 8, group = 2, t = 300;
    for (long cells :
        new long[] {
          (long) kv * group * t * t,
          3L * group * t * t,
          (long) group * t * t,
          group * t * 7L,
          group * t
        }) {
      int[][] seen = new int[kv][t];
      for (TrainingAttention.Block b : TrainingAttention.plan(kv, group, t, cells)) {
        assertTrue((long) b.kvHeads() * group * b.rows() * b.keys() <= cells, b + " in " + cells);
        assertTrue(b.keys() >= b.r0() + b.rows() && b.keys() <= t, b + ": causal keys");
        for (int g = b.g0(); g < b.g0() + b.kvHeads(); g++)
          for (int row = b.r0(); row < b.r0() + b.rows(); row++) seen[g][row]++;
      }
      for (int[] h : seen) for (int n : h) assertEquals(1, n, "cells " + cells);
    }
  }

  record Reference(double[] o, double[] dq, double[] dk, double[] dv) {}

  /** Softmax attention and its backward, one head and query row at a time, in double. */
  static Reference reference(
      ModelConfig c, int[] segStart, float[] q, float[] k, float[] v, float[] dO) {
    int heads = c.numHeads(), kv = c.numKvHeads(), d = c.headDim(), t = segStart.length;
    int window = c.slidingWindow();
    double scale = 1 / Math.sqrt(d);
    double[] o = new double[t * heads * d], dq = new double[o.length];
    double[] dk = new double[t * kv * d], dv = new double[dk.length];
    for (int h = 0; h < heads; h++) {
      int g = h / (heads / kv);
      for (int i = 0; i < t; i++) {
        int lo = window > 0 ? Math.max(segStart[i], i - window + 1) : segStart[i];
        int qi = (i * heads + h) * d;
        double[] pr = new double[i + 1];
        double max = Double.NEGATIVE_INFINITY, sum = 0;
        for (int j = lo; j <= i; j++) {
          double sc = 0;
          for (int x = 0; x < d; x++) sc += q[qi + x] * (double) k[(j * kv + g) * d + x];
          pr[j] = sc * scale;
          max = Math.max(max, pr[j]);
        }
        for (int j = lo; j <= i; j++) sum += pr[j] = Math.exp(pr[j] - max);
        double dsum = 0;
        double[] dp = new double[i + 1];
        for (int j = lo; j <= i; j++) {
          pr[j] /= sum;
          for (int x = 0; x < d; x++) {
            o[qi + x] += pr[j] * v[(j * kv + g) * d + x];
            dp[j] += dO[qi + x] * (double) v[(j * kv + g) * d + x];
          }
          dsum += pr[j] * dp[j];
        }
        for (int j = lo; j <= i; j++) {
          double ds = pr[j] * (dp[j] - dsum) * scale;
          int kj = (j * kv + g) * d;
          for (int x = 0; x < d; x++) {
            dq[qi + x] += ds * k[kj + x];
            dk[kj + x] += ds * q[qi + x];
            dv[kj + x] += pr[j] * dO[qi + x];
          }
        }
      }
    }
    return new Reference(o, dq, dk, dv);
  }

  private static float[] bf16Gaussian(Random r, int n, double sd) {
    float[] x = new float[n];
    for (int i = 0; i < n; i++) x[i] = Bf16.round((float) (sd * r.nextGaussian()));
    return x;
  }

  private static long bf16(Gpu gpu, float[] x) {
    ByteBuffer b = ByteBuffer.allocateDirect(2 * x.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float f : x) b.putShort(Bf16.fromFloat(f));
    long p = gpu.alloc(2L * x.length);
    gpu.upload(p, b.flip());
    return p;
  }

  private static long f32(Gpu gpu, float[] x) {
    ByteBuffer b = ByteBuffer.allocateDirect(4 * x.length).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(x);
    long p = gpu.alloc(4L * x.length);
    gpu.upload(p, b);
    return p;
  }

  private static double[] floats(Gpu gpu, long src, int n) {
    ByteBuffer b = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.LITTLE_ENDIAN);
    gpu.download(src, b);
    double[] out = new double[n];
    for (int i = 0; i < n; i++) out[i] = b.getFloat(4 * i);
    return out;
  }
}

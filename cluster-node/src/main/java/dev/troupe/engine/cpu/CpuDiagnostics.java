package dev.troupe.engine.cpu;

import static org.bytedeco.openblas.global.openblas.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas.cblas_sgemv;

import org.bytedeco.javacpp.FloatPointer;

/** Machine measurements for benchmarks, through the same BLAS the runner uses. */
public final class CpuDiagnostics {
  private CpuDiagnostics() {}

  /**
   * Weight streaming rate of the decode path: best GB/s of a GEMV over a {@code mib} MiB FP32
   * matrix (far larger than the caches, so it measures memory, not cache).
   */
  public static double gemvGBs(int mib, int reps) {
    int in = 4096;
    int out = (int) ((long) mib * (1 << 20) / 4 / in);
    try (FloatPointer w = new FloatPointer((long) out * in);
        FloatPointer x = new FloatPointer(in);
        FloatPointer y = new FloatPointer(out)) {
      float[] row = new float[in];
      for (int i = 0; i < in; i++) row[i] = (i % 7) * 0.01f;
      for (int r = 0; r < out; r++) w.position((long) r * in).put(row, 0, in);
      w.position(0);
      x.put(row, 0, in);
      double best = 0;
      for (int i = 0; i < reps; i++) {
        long s = System.nanoTime();
        cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1f, w, in, x, 1, 0f, y, 1);
        best = Math.max(best, (double) out * in * 4 / (System.nanoTime() - s));
      }
      return best;
    }
  }
}

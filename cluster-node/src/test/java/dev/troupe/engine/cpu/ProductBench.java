package dev.troupe.engine.cpu;

import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.InMemoryWeights;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Per-shape timing of the two product paths behind {@link Forward#KERNEL_MAX_ROWS}: the Vector API
 * kernels on the team ({@link Matrix#product}) against OpenBLAS {@code sgemm} on FP32 tiles ({@link
 * Blas}, single-threaded on every team member, as {@link Forward} runs it), for 16-bit and FP32
 * weights, and for BF16 where this CPU has BF16 matmul hardware also oneDNN's matmul ({@link
 * Bf16Gemm}, one call on oneDNN's threads), alternating the paths within each shape. Not a test
 * (surefire runs {@code *Test} only): run it on the test classpath with {@code --add-modules
 * jdk.incubator.vector}; args {@code [dtype] [rows,...]}. Results in docs/benchmarks.md.
 */
public final class ProductBench {
  private ProductBench() {}

  public static void main(String[] args) {
    DType dt = args.length > 0 ? DType.valueOf(args[0].toUpperCase(Locale.ROOT)) : DType.BF16;
    int[] rowsList =
        args.length > 1
            ? Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray()
            : new int[] {1, 2, 4, 8, 16, 32, 64, 128, 256};
    // small model: qkv, gate/up, down, LM head; medium model: qkv, gate/up, down
    int[][] shapes = {
      {1024, 512}, {3072, 512}, {512, 1536}, {128256, 512}, {2048, 1024}, {5632, 1024}, {1024, 2816}
    };
    Random r = new Random(1);
    Team team = Team.shared();
    Blas[] blases = new Blas[team.size()];
    for (int i = 0; i < blases.length; i++) blases[i] = new Blas();
    Blas.singleThreaded();
    try (Bf16Gemm dnnl = dt == DType.BF16 && Bf16Gemm.available() ? new Bf16Gemm() : null) {
      for (int[] sh : shapes) {
        int out = sh[0], in = sh[1];
        float[] wv = new float[out * in];
        for (int i = 0; i < wv.length; i++) wv[i] = (float) (0.02 * r.nextGaussian());
        Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
        t.put("w", new InMemoryWeights.Tensor(wv, new long[] {out, in}));
        Matrix m = Matrix.load(new InMemoryWeights(t, "bench"), dt, List.of("w"));
        for (int rows : rowsList) {
          if ((long) rows * out > 64L << 20) continue;
          float[] x = new float[rows * in];
          for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
          int xs = m.xStride();
          float[] xl = new float[rows * xs], y = new float[rows * out];
          for (int b = 0; b < rows; b++) Activations.put(x, b * in, in, xl, b * xs, m.packed());
          Runnable kernel =
              () ->
                  team.run(
                      k -> {
                        int[] s = Team.share(out, team.size(), k, Matrix.GROUP);
                        m.product(xl, rows, y, out, 0, s[0], s[1], false);
                      });
          Runnable gemm =
              () ->
                  team.run(
                      k -> {
                        int[] s = Team.share(out, team.size(), k, Matrix.GROUP);
                        blases[k].product(m, x, rows, y, false, s[0], s[1]);
                      });
          Runnable onednn = dnnl == null ? null : () -> dnnl.product(m, x, rows, y, false);
          double[] tk = new double[3], tb = new double[3], td = new double[3];
          for (int round = 0; round < 3; round++) {
            tk[round] = time(kernel);
            tb[round] = time(gemm);
            td[round] = onednn == null ? Double.NaN : time(onednn);
          }
          double k = Arrays.stream(tk).min().orElseThrow(),
              b = Arrays.stream(tb).min().orElseThrow(),
              d = Arrays.stream(td).min().orElseThrow();
          System.out.printf(
              Locale.ROOT,
              "%s out=%6d in=%5d rows=%3d  kernel %9.1f us (%6.1f GFLOP/s, %5.1f GB/s)  blas tiles %9.1f us (%6.1f GFLOP/s)  kernel/blas speed %.2fx  onednn %9.1f us (%6.1f GFLOP/s)  onednn/blas speed %.2fx%n",
              dt,
              out,
              in,
              rows,
              k * 1e6,
              2.0 * rows * out * in / k / 1e9,
              m.bytes() / k / 1e9,
              b * 1e6,
              2.0 * rows * out * in / b / 1e9,
              b / k,
              d * 1e6,
              2.0 * rows * out * in / d / 1e9,
              b / d);
        }
      }
    }
    for (Blas b : blases) b.close();
    System.exit(0);
  }

  private static double time(Runnable f) {
    for (int i = 0; i < 3; i++) f.run();
    double best = Double.MAX_VALUE;
    for (int rep = 0; rep < 5; rep++) {
      int n = 0;
      long t0 = System.nanoTime();
      do {
        f.run();
        n++;
      } while (System.nanoTime() - t0 < 30_000_000L);
      best = Math.min(best, (System.nanoTime() - t0) / 1e9 / n);
    }
    return best;
  }
}

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
 * jdk.incubator.vector}; args {@code [dtype] [rows,...]}, or {@code q8 [rows,...] [rounds]
 * [shape,...]} for the 8-bit case ({@link #q8}). Results in docs/benchmarks.md.
 */
public final class ProductBench {
  private ProductBench() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("q8")) {
      q8(args);
      return;
    }
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
          Runnable kernel = kernel(team, m, xl, rows, y, out);
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

  /**
   * The BF16 kernel on the team against oneDNN's matmul on Q8_0-style weights ({@link Q8Dnnl}, each
   * way this oneDNN offers), at batch 1 and 8, on the shapes where batch-1 decode spends its time;
   * {@code rounds} alternations (default 3), each best of 5 × ≥ 30 ms per path, with the load
   * average before each round. Needs no OpenBLAS, so it also runs with a newer oneDNN preset on the
   * class path. Also prints each Q8 path's largest error against the FP32 product relative to the
   * largest output, a check that weights, scales and layouts were passed as meant.
   */
  private static void q8(String[] args) throws Exception {
    int[] rowsList =
        args.length > 1
            ? Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray()
            : new int[] {1, 8};
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
    var v = org.bytedeco.dnnl.global.dnnl.dnnl_version();
    System.out.printf("oneDNN %d.%d.%d%n", v.major(), v.minor(), v.patch());
    // small: LM head, gate/up; medium: gate/up, down, LM head
    int[][] all = {{128256, 512}, {3072, 512}, {5632, 1024}, {1024, 2816}, {128256, 1024}};
    int[][] shapes =
        args.length > 3
            ? Arrays.stream(args[3].split(","))
                .map(i -> all[Integer.parseInt(i)])
                .toArray(int[][]::new)
            : all;
    Random r = new Random(1);
    Team team = Team.shared();
    for (int[] sh : shapes) {
      int out = sh[0], in = sh[1];
      float[] wv = new float[out * in];
      for (int i = 0; i < wv.length; i++) wv[i] = (float) (0.02 * r.nextGaussian());
      Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
      t.put("w", new InMemoryWeights.Tensor(wv, new long[] {out, in}));
      Matrix m = Matrix.load(new InMemoryWeights(t, "bench"), DType.BF16, List.of("w"));
      for (int rows : rowsList) {
        float[] x = new float[rows * in];
        for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
        float[] exact = new float[rows * out];
        for (int b = 0; b < rows; b++)
          for (int o = 0; o < out; o++) {
            double acc = 0;
            for (int k = 0; k < in; k++) acc += (double) x[b * in + k] * wv[o * in + k];
            exact[b * out + o] = (float) acc;
          }
        int xs = m.xStride();
        float[] xl = new float[rows * xs], yk = new float[rows * out];
        for (int b = 0; b < rows; b++) Activations.put(x, b * in, in, xl, b * xs, m.packed());
        Runnable kernel = kernel(team, m, xl, rows, yk, out);
        kernel.run();
        List<String> names = new java.util.ArrayList<>(List.of("bf16-kernel"));
        List<Runnable> paths = new java.util.ArrayList<>(List.of(kernel));
        List<Q8Dnnl> q8s = new java.util.ArrayList<>();
        StringBuilder info = new StringBuilder();
        info.append(String.format(Locale.ROOT, "  bf16-kernel err %.4f%n", relErr(yk, exact)));
        for (Q8Dnnl.Mode mode : Q8Dnnl.Mode.values()) {
          Q8Dnnl q;
          try {
            q = new Q8Dnnl(mode, wv, out, in, rows);
          } catch (RuntimeException e) {
            info.append("  ").append(mode).append(": no implementation (").append(e.getMessage());
            info.append(")\n");
            continue;
          }
          float[] y = new float[rows * out];
          q.product(x, y);
          info.append(
              String.format(
                  Locale.ROOT, "  %s impl %s err %.4f%n", mode, q.impl(), relErr(y, exact)));
          if (q.impl().startsWith("ref")) { // the reference loops: minutes, not a contender
            q.close();
            continue;
          }
          q8s.add(q);
          names.add(mode.toString());
          paths.add(() -> q.product(x, y));
        }
        System.out.printf(
            Locale.ROOT,
            "out=%d in=%d rows=%d (BF16 %.1f MB)%n%s",
            out,
            in,
            rows,
            m.bytes() / 1e6,
            info);
        for (Runnable p : paths) time(p); // untimed: JIT, oneDNN's first runs, page faults
        for (int round = 0; round < rounds; round++) {
          StringBuilder line =
              new StringBuilder(String.format(Locale.ROOT, "  round %d load %s:", round, load()));
          double base = 0;
          for (int p = 0; p < paths.size(); p++) {
            double s = time(paths.get(p));
            if (p == 0) base = s;
            line.append(
                String.format(
                    Locale.ROOT, "  %s %.1f us (%.2fx)", names.get(p), s * 1e6, base / s));
          }
          System.out.println(line);
        }
        for (Q8Dnnl q : q8s) q.close();
      }
    }
    System.exit(0);
  }

  /** Largest |y − exact| over the largest |exact|. */
  /** The Vector API kernel's product on the team, each member on its share of whole groups. */
  private static Runnable kernel(Team team, Matrix m, float[] xl, int rows, float[] y, int out) {
    return () ->
        team.run(
            k -> {
              int[] s = Team.share(out, team.size(), k, Matrix.GROUP);
              m.product(xl, rows, y, out, 0, s[0], s[1], false);
            });
  }

  private static double relErr(float[] y, float[] exact) {
    double e = 0, mx = 0;
    for (int i = 0; i < y.length; i++) {
      e = Math.max(e, Math.abs(y[i] - exact[i]));
      mx = Math.max(mx, Math.abs(exact[i]));
    }
    return e / mx;
  }

  private static String load() {
    try {
      String[] f =
          java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ");
      return f[0];
    } catch (java.io.IOException e) {
      return "?";
    }
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

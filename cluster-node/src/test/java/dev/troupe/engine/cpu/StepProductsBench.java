package dev.troupe.engine.cpu;

import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.InMemoryWeights;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The weight products of one decode step of a bench model — every layer's qkv, o, gate/up and down
 * and the LM head, BF16 or 8-bit, as {@link Forward} runs them: one team region, each product split
 * by output rows with a barrier after it — without attention, norms or sampling, so the figure is
 * the kernels' memory streaming: weight bytes read per step ÷ time (GB/s), best of rounds. Not a
 * test (surefire runs {@code *Test} only): run on the test classpath with {@code --add-modules
 * jdk.incubator.vector}; args {@code small|medium [rows] [rounds] [bf16|q8_0|onednn]} ({@code
 * onednn}: BF16 weights, every product on oneDNN ({@link Bf16Gemm}, weights resident) called by
 * member 0 as {@link Forward} calls it, the others at the barrier). Results in docs/benchmarks.md.
 */
public final class StepProductsBench {
  private StepProductsBench() {}

  public static void main(String[] args) {
    boolean medium = args.length > 0 && args[0].equals("medium");
    int rows = args.length > 1 ? Integer.parseInt(args[1]) : 1;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 40;
    boolean q8 = args.length > 3 && args[3].equals("q8_0");
    Bf16Gemm dnn = args.length > 3 && args[3].equals("onednn") ? new Bf16Gemm(4L << 30) : null;
    int hidden = medium ? 1024 : 512, layers = medium ? 16 : 8, inter = medium ? 2816 : 1536;
    int qkv = hidden + 2 * (hidden / 2); // heads / KV heads = 2, as the bench models
    List<int[]> shapes = new ArrayList<>();
    shapes.add(new int[] {128256, hidden});
    for (int l = 0; l < layers; l++) {
      shapes.add(new int[] {qkv, hidden});
      shapes.add(new int[] {hidden, hidden});
      shapes.add(new int[] {2 * inter, hidden});
      shapes.add(new int[] {hidden, inter});
    }
    SplittableRandom r = new SplittableRandom(1);
    List<Matrix> ms = new ArrayList<>();
    long bytes = 0;
    for (int[] s : shapes) {
      float[] v = new float[s[0] * s[1]];
      for (int i = 0; i < v.length; i++) v[i] = (float) (0.02 * (r.nextDouble() - 0.5));
      Map<String, InMemoryWeights.Tensor> t = new LinkedHashMap<>();
      t.put("w", new InMemoryWeights.Tensor(v, new long[] {s[0], s[1]}));
      Matrix m = Matrix.load(new InMemoryWeights(t, "bench"), DType.BF16, q8, List.of("w"));
      ms.add(m);
      bytes += m.bytes();
    }
    float[] x = new float[rows * inter];
    for (int i = 0; i < x.length; i++) x[i] = (float) r.nextDouble();
    float[] y = new float[rows * 128256];
    Team team = Team.shared();
    double best = Double.MAX_VALUE;
    for (int round = 0; round < rounds; round++) {
      long t0 = System.nanoTime();
      team.run(
          m -> {
            for (Matrix w : ms) {
              if (dnn != null) {
                if (m == 0) dnn.product(w, x, rows, y, false);
              } else {
                int[] share = Team.share(w.out, team.size(), m, Matrix.GROUP);
                w.product(x, rows, y, w.out, 0, share[0], share[1], false);
              }
              team.barrier();
            }
          });
      best = Math.min(best, (System.nanoTime() - t0) / 1e9);
    }
    System.out.printf(
        Locale.ROOT,
        "%s, %d row(s), %d threads: %.0f MB of %s weights per step, best of %d: %.2f ms = %.1f GB/s%n",
        medium ? "medium" : "small",
        rows,
        team.size(),
        bytes / 1e6,
        q8 ? "Q8_0" : dnn != null ? "BF16 (oneDNN)" : "BF16",
        rounds,
        best * 1e3,
        bytes / best / 1e9);
  }
}

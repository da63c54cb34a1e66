package dev.troupe.bench.cuda;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cuda.CudaProbe;
import dev.troupe.engine.cuda.CudaTrainer;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.cluster.TrainingConfig;
import dev.troupe.training.nd4j.LoraSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * GPU training benchmark and gradient check of the CUDA runner's training mode (not a test;
 * docs/benchmarks.md, "GPU training"), on a model directory ({@code make_random_model.py}) with
 * ART's adapter (LoRA r 8, α 16, all seven projections):
 *
 * <ol>
 *   <li>gradient check: one row of two packed segments ({@code check} tokens), B drawn N(0, 0.02²)
 *       so every A has a gradient, L = Σ coef_t·logprob_t with random coefficients; the row, the
 *       adapter, Troupe's log-probabilities and every LoRA gradient go to {@code DUMP}, where
 *       {@code hf_train.py} recomputes them in FP32 with PyTorch and compares;
 *   <li>speed: a training step (forward, ART's default loss, backward, AdamW) on a row of {@code
 *       row} tokens (one segment, every position trained), 2 warm-up steps, then the median of
 *       {@code steps}: tokens/s = row / step time. Each step ends with its small download, so the
 *       host's clock sees the device's work. Then one more step timed per phase ({@link
 *       CudaTrainer#timePhases}: products, attention forward and backward, elementwise, loss,
 *       optimizer), printed after the tokens/s.
 * </ol>
 *
 * <p>Usage: {@code CudaTrainBench MODEL_DIR DUMP_DIR [row=2048] [steps=5] [check=256]}.
 */
public final class CudaTrainBench {
  private CudaTrainBench() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2 || args.length > 5) {
      System.err.println("usage: CudaTrainBench MODEL_DIR DUMP_DIR [row] [steps] [check]");
      System.exit(2);
    }
    Path dir = Path.of(args[0]), dump = Path.of(args[1]);
    int row = args.length > 2 ? Integer.parseInt(args[2]) : 2048;
    int steps = args.length > 3 ? Integer.parseInt(args[3]) : 5;
    int check = args.length > 4 ? Integer.parseInt(args[4]) : 256;
    CudaProbe.Result probe = CudaProbe.get();
    if (!probe.usable()) {
      System.err.println(probe.summary());
      System.exit(2);
    }
    ModelConfig cfg = ModelConfigs.read(dir);
    LoraSpec spec = LoraSpec.DEFAULT;
    CudaTrainer.Adapter adapter =
        new CudaTrainer.Adapter(spec.rank(), spec.alpha(), spec.targets());
    long t0 = System.nanoTime();
    CudaTrainer t;
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      t =
          CudaTrainer.load(
              CudaProbe.open(probe.usableDevices().get(0).ordinal()), cfg, w, adapter, row);
    }
    try (t) {
      System.out.printf(
          Locale.ROOT,
          "CudaTrainBench on %s: %s, loaded in %.1f s; work buffers for %d tokens ~%d MiB%n",
          t.device(),
          dir,
          (System.nanoTime() - t0) / 1e9,
          row,
          CudaTrainer.workspaceBytes(cfg, spec.rank(), row) >> 20);
      gradientCheck(t, cfg, spec, dump, check);
      speed(t, cfg, spec, row, steps);
    }
  }

  /** Writes the check row, the adapter, the log-probabilities and the gradients to {@code dump}. */
  static void gradientCheck(CudaTrainer t, ModelConfig cfg, LoraSpec spec, Path dump, int n)
      throws Exception {
    Files.createDirectories(dump);
    Random r = new Random(7);
    Map<String, double[]> params = spec.initialParameters(cfg);
    for (Map.Entry<String, double[]> e : params.entrySet())
      if (e.getKey().endsWith(".lora_B"))
        for (int i = 0; i < e.getValue().length; i++) e.getValue()[i] = 0.02 * r.nextGaussian();
    t.parameters(params);
    int[] tokens = new int[n], positions = new int[n], segments = new int[n];
    double[] coef = new double[n];
    int half = n / 2;
    for (int i = 0; i < n; i++) {
      tokens[i] = r.nextInt(cfg.vocabSize());
      positions[i] = i < half ? i : i - half;
      segments[i] = i < half ? 0 : 1;
      // the last position of each segment has no target in that segment
      coef[i] = i == half - 1 || i == n - 1 ? 0 : r.nextGaussian() / Math.sqrt(n);
    }
    long t0 = System.nanoTime();
    CudaTrainer.Gradients g = t.gradients(tokens, positions, segments, null, coef);
    double ms = (System.nanoTime() - t0) / 1e6;
    ObjectNode json = Json.mapper().createObjectNode();
    json.putPOJO("tokens", tokens);
    json.putPOJO("positions", positions);
    json.putPOJO("segments", segments);
    json.putPOJO("coef", coef);
    json.putPOJO("logprobs", g.logprobs());
    json.put("alpha", spec.alpha());
    json.put("rank", spec.rank());
    Files.writeString(dump.resolve("row.json"), json.toString());
    Map<String, long[]> shapes = t.shapes();
    TinyModels.writeSafetensors(
        dump.resolve("adapter.safetensors"), floats(params), shapes, DType.F32);
    TinyModels.writeSafetensors(
        dump.resolve("troupe_grads.safetensors"), floats(g.gradients()), shapes, DType.F32);
    System.out.printf(
        Locale.ROOT,
        "gradient check row: %d tokens in 2 segments, forward + backward %.0f ms; %d tensors written to %s%n",
        n,
        ms,
        shapes.size(),
        dump);
  }

  /** Times training steps on a row of {@code n} tokens and prints tokens/s. */
  static void speed(CudaTrainer t, ModelConfig cfg, LoraSpec spec, int n, int steps) {
    t.parameters(spec.initialParameters(cfg));
    Random r = new Random(11);
    int[] tokens = new int[n], positions = new int[n], segments = new int[n], hist = new int[n];
    boolean[] mask = new boolean[n];
    double[] old = new double[n], adv = new double[n], w = new double[n];
    for (int i = 0; i < n; i++) {
      tokens[i] = r.nextInt(cfg.vocabSize());
      positions[i] = i;
      mask[i] = i + 1 < n;
      old[i] = -12; // about log(1 / vocabulary) of random weights
      adv[i] = r.nextBoolean() ? 1 : -1;
      w[i] = 1;
    }
    CudaTrainer.Targets targets = new CudaTrainer.Targets(mask, old, adv, w, hist);
    CudaTrainer.Adam adam = new CudaTrainer.Adam(0.9, 0.99, 1e-8, 0.1, 0.1);
    TrainingConfig config = TrainingConfig.defaults();
    double[] ms = new double[steps];
    CudaTrainer.Step last = null;
    for (int s = -2; s < steps; s++) {
      long t0 = System.nanoTime();
      last = t.step(tokens, positions, segments, targets, config, adam, config.learningRate());
      if (s >= 0) ms[s] = (System.nanoTime() - t0) / 1e6;
    }
    double[] sorted = ms.clone();
    Arrays.sort(sorted);
    double median = sorted[steps / 2];
    System.out.printf(
        Locale.ROOT,
        "training step, LoRA r %d on %d projections, one row of %d tokens (all trained): median"
            + " %.1f ms of %d (%s), %.0f tokens/s; loss %.4f, grad norm %.4f%n",
        spec.rank(),
        spec.targets().size(),
        n,
        median,
        steps,
        Arrays.toString(Arrays.stream(ms).map(x -> Math.round(x * 10) / 10.0).toArray()),
        n / (median / 1e3),
        last.loss(),
        last.gradNorm());
    // one more step with every change of phase waited for: where the time goes (the waits make it
    // slower than the median above; the shares are what to read)
    t.timePhases(true);
    long t0 = System.nanoTime();
    t.step(tokens, positions, segments, targets, config, adam, config.learningRate());
    double timed = (System.nanoTime() - t0) / 1e6;
    Map<String, Double> phases = t.phaseMillis();
    t.timePhases(false);
    StringBuilder split = new StringBuilder();
    phases.forEach(
        (phase, millis) ->
            split.append(
                String.format(
                    Locale.ROOT, "%s%s %.1f ms", split.isEmpty() ? "" : ", ", phase, millis)));
    System.out.printf(
        Locale.ROOT, "phase split of one timed step (%.1f ms): %s%n", timed, split.toString());
  }

  private static Map<String, float[]> floats(Map<String, double[]> d) {
    Map<String, float[]> out = new LinkedHashMap<>();
    d.forEach(
        (k, v) -> {
          float[] f = new float[v.length];
          for (int i = 0; i < f.length; i++) f[i] = (float) v[i];
          out.put(k, f);
        });
    return out;
  }
}

package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.testing.MapWeights;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import dev.troupe.training.nd4j.LoraSpec;
import dev.troupe.training.nd4j.LoraTransformer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.api.buffer.DataType;

/**
 * The CUDA runner's training mode against the CPU trainer ({@link LoraTransformer} in double
 * precision, itself checked against finite differences and an independent decoder) on tiny random
 * models of every architecture, and against finite differences of its own forward; on the CPU
 * emulation of the kernels always, on a GPU when there is one.
 *
 * <p>Tolerances: the weights are BF16-exact, so both sides multiply the same numbers, but the
 * device rounds every product's input to BF16 — activations forward, and the gradients flowing
 * backward — and the LoRA matrices' working copies (relative error ≤ 2⁻⁹ each, about a dozen
 * roundings per layer and direction). Log-probabilities: ‖device − cpu‖ / ‖cpu‖ ≤ 1e-2 over the row
 * (METHOD's band for BF16 operands, 1e-3 … 1e-2). Gradients: ≤ 5e-2 per parameter tensor: a
 * gradient passes twice as many roundings as the forward (its own and the recomputed activations'),
 * and the small tensors of a tiny model do not average them out. Finite differences: per parameter
 * tensor along its gradient u = g / |g|, the odd part (L(ε) − L(−ε)) / 2 at four steps up to the
 * one that moves L = Σ coef·logprob by about 0.4, fit with c1·ε + c3·ε³ (c1 against |g|). A
 * forward's BF16 roundings make a single small step noisy (measured ±30% at steps that move L by
 * 0.05) and large ones curve; within 10% per tensor and 3% on average over the model (measured ≤
 * 7.4% and ≤ 1.4% on the emulator). Measured values are printed per case.
 */
class CudaTrainerTest {
  // a row of two packed segments: positions restart, attention must not cross
  static final int[] TOKENS = {1, 50, 9, 33, 7, 2, 41, 88, 6, 0, 11, 64, 3};
  static final int[] POSITIONS = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5};
  static final int[] SEGMENTS = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  static final LoraSpec SPEC = new LoraSpec(2, 4, LoraSpec.ALL_TARGETS, false, 7);

  static List<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    for (GpuBackends b : GpuBackends.selected())
      for (Arch a : Arch.values()) out.add(Arguments.of(b, a));
    return out;
  }

  /**
   * The tiny config of {@code arch}; Mistral with a sliding window of 4 (segments are 6–7 long).
   */
  static ModelConfig config(Arch arch) {
    ModelConfig c = TinyModels.config(arch);
    return arch == Arch.MISTRAL ? TinyModels.withSlidingWindow(c, 4) : c;
  }

  static CudaTrainer.Adapter adapter(LoraSpec s) {
    return new CudaTrainer.Adapter(s.rank(), s.alpha(), s.targets());
  }

  static CudaTrainer trainer(GpuBackends b, ModelConfig c, Map<String, float[]> w, LoraSpec s) {
    return CudaTrainer.load(b.open(c, 16), c, new MapWeights(c, w), adapter(s), 16);
  }

  /** The CPU trainer in double precision with B drawn N(0, 0.3²) (B = 0 would hide dA). */
  static LoraTransformer reference(ModelConfig c, Map<String, float[]> w, LoraSpec s, long seed) {
    LoraTransformer m = new LoraTransformer(c, new MapWeights(c, w), s, DataType.DOUBLE);
    Random r = new Random(seed);
    for (Map.Entry<String, double[]> e : m.parameters().entrySet())
      if (e.getKey().endsWith(".lora_B"))
        for (int i = 0; i < e.getValue().length; i++) e.getValue()[i] = 0.3 * r.nextGaussian();
    return m;
  }

  static double relErr(double[] got, double[] ref) {
    double num = 0, den = 0;
    for (int i = 0; i < ref.length; i++) {
      assertTrue(Double.isFinite(got[i]), "non-finite value at " + i);
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    return Math.sqrt(num / Math.max(den, 1e-300));
  }

  static double[] coefficients(long seed) {
    Random r = new Random(seed);
    double[] coef = new double[TOKENS.length];
    for (int t = 0; t < coef.length - 1; t++) coef[t] = r.nextGaussian();
    return coef;
  }

  @ParameterizedTest
  @MethodSource("cases")
  void logprobsAndEveryLoraGradientMatchTheCpuTrainer(GpuBackends b, Arch arch) {
    ModelConfig c = config(arch);
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(c, 21 + arch.ordinal());
    LoraTransformer cpu = reference(c, w, SPEC, 5);
    double[] coef = coefficients(3);
    LoraTransformer.Output ref = cpu.forwardBackward(TOKENS, POSITIONS, SEGMENTS, lp -> coef);
    try (CudaTrainer gpu = trainer(b, c, w, SPEC)) {
      gpu.parameters(cpu.parameters());
      CudaTrainer.Scores s = gpu.score(TOKENS, POSITIONS, SEGMENTS, null);
      double lpErr = relErr(s.logprobs(), ref.logprobs());
      double entErr = relErr(s.entropies(), ref.entropies());
      assertTrue(lpErr <= 1e-2, arch + " logprobs: relative error " + lpErr);
      assertTrue(entErr <= 1e-2, arch + " entropies: relative error " + entErr);
      CudaTrainer.Gradients g = gpu.gradients(TOKENS, POSITIONS, SEGMENTS, null, coef);
      assertEquals(ref.gradients().keySet(), g.gradients().keySet());
      double worst = 0;
      String worstName = "";
      for (String name : ref.gradients().keySet()) {
        double e = relErr(g.gradients().get(name), ref.gradients().get(name));
        if (e > worst) {
          worst = e;
          worstName = name;
        }
      }
      System.out.printf(
          "[%s %s] vs the CPU trainer: logprobs %.2e, entropies %.2e, worst gradient %.2e (%s)%n",
          b, arch, lpErr, entErr, worst, worstName);
      assertTrue(worst <= 5e-2, arch + " gradient " + worstName + ": relative error " + worst);
    }
  }

  @ParameterizedTest
  @MethodSource("cases")
  void gradientsMatchFiniteDifferencesOfTheDeviceForward(GpuBackends b, Arch arch) {
    ModelConfig c = config(arch);
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(c, 31 + arch.ordinal());
    LoraTransformer cpu = reference(c, w, SPEC, 6);
    double[] coef = coefficients(4);
    try (CudaTrainer gpu = trainer(b, c, w, SPEC)) {
      Map<String, double[]> theta = cpu.parameters();
      gpu.parameters(theta);
      Map<String, double[]> grads =
          gpu.gradients(TOKENS, POSITIONS, SEGMENTS, null, coef).gradients();
      double worst = 0, sum = 0;
      for (String name : theta.keySet()) {
        // L = Σ coef·logprob along u = g / |g|: dL/dε = |g|; the outermost step moves L by ~0.4
        double[] g = grads.get(name);
        double norm = Math.sqrt(dot(g, g));
        double fd = slope(gpu, theta, name, g, norm, 0.4 / norm, coef);
        double e = Math.abs(fd - norm) / norm;
        worst = Math.max(worst, e);
        sum += e;
        assertTrue(
            e <= 0.1, arch + " " + name + ": finite difference " + fd + ", gradient " + norm);
      }
      double mean = sum / theta.size();
      assertTrue(mean <= 0.03, arch + ": mean relative difference " + mean);
      gpu.parameters(theta);
      System.out.printf(
          "[%s %s] directional finite differences vs gradients: worst %.2e, mean %.2e%n",
          b, arch, worst, mean);
    }
  }

  /**
   * A runner that will train keeps {@link CudaTrainer#reservedBytes} out of its KV cache (the
   * emulator reports half its memory free: the blocks are exact), and a trainer on it for rows of
   * that length — its buffers, the adapter, gradients and moments — allocates no more than that.
   */
  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void aRunnerThatTrainsKeepsTheTrainersMemoryOutOfItsKvCache(GpuBackends b) {
    ModelConfig c = TinyModels.config(Arch.QWEN3);
    Map<String, float[]> w = CudaModelRunnerTest.bf16Weights(c, 41);
    int rows = 64, bs = 4;
    long reserved = CudaTrainer.reservedBytes(c, adapter(SPEC), rows);
    long perBlock = 2L * c.numLayers() * bs * c.numKvHeads() * c.headDim() * 2;
    long rope = 2L * c.maxPositionEmbeddings() * (c.headDim() / 2) * 4;
    int without;
    try (CudaModelRunner r =
        CudaModelRunner.load(b.open(c, bs), c, new MapWeights(c, w), bs, 0, 0.9, 16)) {
      without = r.numBlocks();
    }
    long[] allocated = {0};
    Gpu real = b.open(c, bs);
    long total = real.totalMemory();
    Gpu gpu =
        (Gpu)
            java.lang.reflect.Proxy.newProxyInstance(
                Gpu.class.getClassLoader(),
                new Class<?>[] {Gpu.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("alloc")) allocated[0] += (Long) args[0];
                  try {
                    return method.invoke(real, args);
                  } catch (java.lang.reflect.InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    try (CudaModelRunner r =
        CudaModelRunner.load(gpu, c, new MapWeights(c, w), bs, 0, 0.9, 16, true, reserved)) {
      assertEquals(reserved, r.reservedBytes());
      assertTrue(
          (double) r.numBlocks() * perBlock + rope + reserved <= 0.9 * total, "" + r.numBlocks());
      if (b == GpuBackends.EMULATED) {
        // one block fewer than fits: the runner's scratch block
        assertEquals(
            (long) ((0.9 * total - total / 2 - rope - reserved) / perBlock) - 1, r.numBlocks());
        assertTrue(
            without - r.numBlocks() >= reserved / perBlock, without + " vs " + r.numBlocks());
      }
      long before = allocated[0];
      try (CudaTrainer t = r.trainer(adapter(SPEC), rows)) {
        int[] tokens = new int[rows], positions = new int[rows];
        for (int i = 0; i < rows; i++) {
          tokens[i] = (7 * i + 3) % c.vocabSize();
          positions[i] = i;
        }
        t.gradients(tokens, positions, new int[rows], null, new double[rows]);
        assertTrue(
            allocated[0] - before <= reserved,
            "the trainer allocated " + (allocated[0] - before) + " bytes; kept " + reserved);
      }
    }
  }

  /**
   * dL/dε at 0 along u = g / |g| from L(±ε_i), ε_i = E/4 … E: a least-squares fit of c1·ε + c3·ε³
   * to the odd part (L(ε) − L(−ε)) / 2, which the even terms and the curvature's cubic cannot bias.
   */
  private static double slope(
      CudaTrainer gpu,
      Map<String, double[]> theta,
      String name,
      double[] g,
      double norm,
      double e,
      double[] coef) {
    double s11 = 0, s13 = 0, s33 = 0, s1y = 0, s3y = 0;
    for (int i = 1; i <= 4; i++) {
      double x = e * i / 4;
      double y =
          (loss(gpu, theta, name, g, x / norm, coef) - loss(gpu, theta, name, g, -x / norm, coef))
              / 2;
      s11 += x * x;
      s13 += x * x * x * x;
      s33 += x * x * x * x * x * x;
      s1y += x * y;
      s3y += x * x * x * y;
    }
    return (s1y * s33 - s3y * s13) / (s11 * s33 - s13 * s13);
  }

  private static double loss(
      CudaTrainer gpu,
      Map<String, double[]> theta,
      String name,
      double[] dir,
      double step,
      double[] coef) {
    Map<String, double[]> moved = new LinkedHashMap<>(theta);
    double[] p = theta.get(name).clone();
    for (int i = 0; i < p.length; i++) p[i] += step * dir[i];
    moved.put(name, p);
    gpu.parameters(moved);
    return dot(coef, gpu.score(TOKENS, POSITIONS, SEGMENTS, null).logprobs());
  }

  static double dot(double[] a, double[] b) {
    double s = 0;
    for (int i = 0; i < a.length; i++) s += a[i] * b[i];
    return s;
  }
}

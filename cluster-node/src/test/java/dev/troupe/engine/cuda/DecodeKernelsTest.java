package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.DeviceSampling.Params;
import dev.troupe.engine.DeviceSampling.Result;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.sampling.EosTokens;
import dev.troupe.engine.sampling.LogitsProcessorRegistry;
import dev.troupe.engine.sampling.Sampler;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Kernels whose launch spreads one row over several blocks (docs/engine.md, "Decode kernels at
 * small batches"), at sizes the tiny models' runner tests do not reach: the result must not depend
 * on how many blocks share a row; and device sampling over a vocabulary larger than the weights its
 * top-k and top-p keep in shared memory (kernels.cu's SAMPLE_CAP, 4,096), which {@link
 * DeviceSamplerTest}'s 300 tokens never exceed.
 */
class DecodeKernelsTest {
  static final ModelConfig CFG = TinyModels.config(Arch.LLAMA);

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void siluMulOverSeveralBlocksPerRowEqualsOneBlockAndTheScalarForm(GpuBackends backend) {
    int rows = 2, inter = 2500;
    int blocks = KernelSource.siluBlocks(inter);
    assertEquals(3, blocks, "2,500 outputs at about 4 a thread of 256");
    Random r = new Random(5);
    float[] gu = new float[rows * 2 * inter];
    for (int i = 0; i < gu.length; i++) gu[i] = (float) (r.nextGaussian() * 3);
    try (Gpu gpu = backend.open(CFG, 4)) {
      gpu.loadKernels(KernelSource.generate(CFG, 4), KernelSource.KERNELS);
      long in = gpu.alloc(gu.length * 4L), out = gpu.alloc(rows * inter * 2L);
      ByteBuffer b = ByteBuffer.allocateDirect(gu.length * 4).order(ByteOrder.LITTLE_ENDIAN);
      for (float v : gu) b.putFloat(v);
      b.flip();
      gpu.upload(in, b);
      short[] one = silu(gpu, in, out, rows, inter, 1),
          spread = silu(gpu, in, out, rows, inter, blocks);
      assertArrayEquals(one, spread, "one block per row against " + blocks);
      for (int t = 0; t < rows; t++)
        for (int i = 0; i < inter; i++) {
          double g = gu[t * 2 * inter + i], u = gu[t * 2 * inter + inter + i];
          double want = g / (1 + Math.exp(-g)) * u;
          float got = Float.intBitsToFloat((spread[t * inter + i] & 0xffff) << 16);
          assertTrue(
              Math.abs(got - want) <= 1e-2 * Math.abs(want) + 1e-6,
              "row " + t + " output " + i + ": " + got + " against " + want);
        }
    }
  }

  @ParameterizedTest
  @MethodSource("dev.troupe.engine.cuda.GpuBackends#selected")
  void topKAndTopPOverALargeVocabularyDrawTheHostSamplersTokens(GpuBackends backend) {
    int vocab = 12_000;
    SamplerFactory factory =
        new SamplerFactory(
            vocab, null, new EosTokens(1, Set.of(2)), LogitsProcessorRegistry.none());
    Random r = new Random(17);
    List<float[]> logits = new ArrayList<>();
    List<Params> rows = new ArrayList<>();
    List<Integer> expected = new ArrayList<>();
    List<String> what = new ArrayList<>();
    // top-k below and above the cap, top-p alone and after top-k, over peaked weights (they fit
    // the cap after a few bisection steps) and flat ones (a top-p of 0.95 keeps more than the cap)
    for (double spread : new double[] {6, 0.3})
      for (int topK : new int[] {0, 20, 700, 6000})
        for (double topP : new double[] {1, 0.5, 0.95}) {
          for (int rep = 0; rep < 2; rep++) {
            float[] x = new float[vocab];
            for (int i = 0; i < vocab; i++) x[i] = (float) (r.nextGaussian() * spread);
            SamplingParams.Builder b =
                SamplingParams.builder().maxTokens(100).temperature(0.8).seed(r.nextLong());
            if (topK > 0) b.topK(topK);
            if (topP < 1) b.topP(topP);
            Sampler sampler =
                factory.create(b.build().withDefaults(SamplingDefaults.NONE), new int[] {3, 4}, 0);
            Params own = sampler.deviceParams();
            expected.add(sampler.next(x).token());
            logits.add(x);
            rows.add(own);
            what.add("spread " + spread + ", top_k " + topK + ", top_p " + topP + ", row " + rep);
          }
        }
    try (Gpu gpu = backend.open(CFG, 4)) {
      gpu.loadKernels(KernelSource.generate(CFG, 4), KernelSource.KERNELS);
      int n = rows.size();
      long in = gpu.alloc((long) n * vocab * 4), work = gpu.alloc((long) n * vocab * 4);
      ByteBuffer b = ByteBuffer.allocateDirect(n * vocab * 4).order(ByteOrder.LITTLE_ENDIAN);
      for (float[] x : logits) for (float v : x) b.putFloat(v);
      b.flip();
      gpu.upload(in, b);
      List<Result> got =
          DeviceSampler.sample(
              gpu, in, work, vocab, rows, gpu instanceof EmulatedGpu ? 64 : DeviceSampler.THREADS);
      for (int i = 0; i < n; i++) assertEquals(expected.get(i), got.get(i).token(), what.get(i));
    }
  }

  /** silu_mul over {@code blocks} blocks per row, after filling the output with a NaN pattern. */
  private static short[] silu(Gpu gpu, long in, long out, int rows, int inter, int blocks) {
    ByteBuffer nan = ByteBuffer.allocateDirect(rows * inter * 2).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < rows * inter; i++) nan.putShort((short) 0x7fc1);
    nan.flip();
    gpu.upload(out, nan);
    gpu.launch("silu_mul", rows, blocks, KernelSource.ELEMENT_THREADS, in, out, inter);
    ByteBuffer got = ByteBuffer.allocateDirect(rows * inter * 2).order(ByteOrder.LITTLE_ENDIAN);
    gpu.download(out, got);
    short[] s = new short[rows * inter];
    got.asShortBuffer().get(s);
    return s;
  }
}

package dev.troupe.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Kernels whose launch spreads one row over several blocks (docs/engine.md, "Decode kernels at
 * small batches"), at sizes the tiny models' runner tests do not reach: the result must not depend
 * on how many blocks share a row.
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

package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.model.RoundedWeights;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.ServedDType;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.ScalarReferenceModel;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.SortedSet;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A model served with {@code --quantization q8_0} against the double-precision reference model run
 * on Q8_0's dequantized weights (quantized here by the rule written out again, {@link
 * Dequantized}): every architecture, a prompt in one chunk, chunked prefill, decode steps and a
 * mixed batch. The only differences left are FP32 arithmetic in another order, as for the 16-bit
 * dtypes ({@link CpuModelRunnerTest}'s tolerance); a misplaced byte or scale moves logits by 1e-2
 * or more. The served logits also differ from the unquantized model's (the weights did change).
 */
class Q8ModelTest {
  @TempDir Path tmp;

  @ParameterizedTest
  @EnumSource(Arch.class)
  void matchesTheReferenceOnDequantizedWeights(Arch arch) throws Exception {
    DType stored = arch == Arch.LLAMA || arch == Arch.MISTRAL ? DType.F32 : DType.BF16;
    Path dir = TinyModels.write(tmp.resolve(arch.name()), arch, stored, 11 + arch.ordinal(), false);
    Random r = new Random(5);
    int[] a = new int[21], b = new int[9];
    for (int i = 0; i < a.length; i++) a[i] = r.nextInt(97);
    for (int i = 0; i < b.length; i++) b[i] = r.nextInt(97);
    float[][] refA, refB, unquantized;
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      DType served = ServedDType.resolve("auto", ModelConfigs.torchDType(dir), w);
      WeightSource servedWeights = RoundedWeights.of(w, served);
      ScalarReferenceModel ref =
          new ScalarReferenceModel(ModelConfigs.read(dir), new Dequantized(servedWeights));
      refA = ref.logits(a);
      refB = ref.logits(b);
      unquantized = new ScalarReferenceModel(ModelConfigs.read(dir), servedWeights).logits(a);
    }
    double tol = CpuModelRunnerTest.TOL;
    try (ModelRunner m = ModelRunners.open(dir, "auto", Quantization.Q8_0, 32, 4)) {
      assertEquals(Quantization.Q8_0, ((CpuModelRunner) m).quantization());
      float[][] all =
          m.forward(List.of(new SequenceChunk(a, 0, new int[] {7, 3, 9, 0, 5, 30}, true))).get(0);
      float moved = 0;
      for (int t = 0; t < a.length; t++) {
        float d = CpuModelRunnerTest.maxDiff(all[t], refA[t]);
        assertTrue(d < tol, arch + " position " + t + ": " + d);
        moved = Math.max(moved, CpuModelRunnerTest.maxDiff(all[t], unquantized[t]));
      }
      assertTrue(
          moved > 10 * tol, arch + ": quantized logits equal the unquantized ones (" + moved + ")");
      // chunked prefill, then decode steps, in other blocks
      int[] table = {1, 2, 4, 6, 8, 10};
      m.forward(List.of(new SequenceChunk(Arrays.copyOfRange(a, 0, 8), 0, table, false)));
      float[][] l =
          m.forward(List.of(new SequenceChunk(Arrays.copyOfRange(a, 8, 15), 8, table, true)))
              .get(0);
      for (int i = 0; i < 7; i++)
        assertTrue(CpuModelRunnerTest.maxDiff(l[i], refA[8 + i]) < tol, arch + " chunk " + i);
      for (int t = 15; t < a.length - 1; t++) {
        l = m.forward(List.of(new SequenceChunk(new int[] {a[t]}, t, table, false))).get(0);
        assertTrue(CpuModelRunnerTest.maxDiff(l[0], refA[t]) < tol, arch + " decode at " + t);
      }
      // a mixed batch: b's whole prompt beside a's next decode step
      List<float[][]> mixed =
          m.forward(
              List.of(
                  new SequenceChunk(b, 0, new int[] {12, 13, 14}, true),
                  new SequenceChunk(new int[] {a[a.length - 1]}, a.length - 1, table, false)));
      for (int i = 0; i < b.length; i++)
        assertTrue(
            CpuModelRunnerTest.maxDiff(mixed.get(0)[i], refB[i]) < tol, arch + " mixed b " + i);
      assertTrue(
          CpuModelRunnerTest.maxDiff(mixed.get(1)[0], refA[a.length - 1]) < tol, arch + " mixed a");
    }
  }

  /**
   * Another source's matrices (2-D tensors) as Q8_0 dequantizes them: per row, per block of 32,
   * {@code d = f16(max|v| / 127)}, {@code q = round(v · (1 / (max|v| / 127)))} halves away from
   * zero, value {@code q · d}; 1-D tensors as they are.
   */
  static final class Dequantized implements WeightSource {
    private final WeightSource src;

    Dequantized(WeightSource src) {
      this.src = src;
    }

    @Override
    public SortedSet<String> names() {
      return src.names();
    }

    @Override
    public TensorInfo info(String name) {
      TensorInfo t = src.info(name);
      return t.shape().size() < 2 ? t : new TensorInfo(t.name(), DType.F32, t.shape(), t.origin());
    }

    @Override
    public void copyTo(String name, long offset, int count, FloatBuffer dst) {
      List<Long> shape = src.info(name).shape();
      if (shape.size() < 2) {
        src.copyTo(name, offset, count, dst);
        return;
      }
      int in = (int) (long) shape.get(shape.size() - 1);
      long row0 = offset / in, row1 = (offset + count + in - 1) / in;
      float[] rows = new float[(int) ((row1 - row0) * in)];
      src.copyTo(name, row0 * in, rows.length, FloatBuffer.wrap(rows));
      for (int r = 0; r < row1 - row0; r++)
        for (int k0 = 0; k0 < in; k0 += 32) {
          int end = Math.min(in, k0 + 32);
          float amax = 0;
          for (int k = k0; k < end; k++) amax = Math.max(amax, Math.abs(rows[r * in + k]));
          float scale = amax / 127f;
          float d = DType.f16ToFloat(DType.floatToF16(scale));
          for (int k = k0; k < end; k++) {
            float v = scale == 0 ? 0 : rows[r * in + k] * (1f / scale);
            double q = Math.signum(v) * Math.floor(Math.abs((double) v) + 0.5);
            rows[r * in + k] = (float) (q * d);
          }
        }
      dst.put(rows, (int) (offset - row0 * in), count);
    }

    @Override
    public String origin() {
      return "Q8_0 of " + src.origin();
    }

    @Override
    public void close() {
      src.close();
    }
  }
}

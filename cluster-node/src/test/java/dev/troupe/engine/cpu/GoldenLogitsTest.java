package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.ScalarReferenceModel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Our logits against PyTorch's for tiny random models in Hugging Face format. The models and {@code
 * golden.json} under {@code src/test/resources/golden/} are written by {@code
 * tools/golden/make_golden.py} (Debian python3-torch, the transformers model math in torch): Llama
 * with llama3 rope scaling in BF16, Qwen3 with q/k norm and tied embeddings in F16.
 *
 * <p>Tolerance 1e-4 on logits of magnitude ~1: a 16-bit weight widens to FP32 exactly, so we and
 * PyTorch sum the same FP32 products in different orders (rounding ~6e-8 relative per term, sums of
 * at most a few hundred terms: ~1e-6 on these logits), while one BF16 rounding step is 2⁻⁸ relative
 * and an F16 step 2⁻¹¹, so weights held at another precision than PyTorch's would show far above
 * it. Where a BF16 model's rows round their activations to BF16 (oneDNN's arithmetic, {@code
 * troupe.worker.compute.bf16-gemm-decode-rows}), the same tolerance holds against the scalar
 * reference that rounds them (which the last check ties to PyTorch's FP32 logits).
 */
class GoldenLogitsTest {

  @ParameterizedTest
  @ValueSource(strings = {"llama", "qwen3"})
  void matchesPyTorch(String name) throws Exception {
    Path dir = Path.of(GoldenLogitsTest.class.getResource("/golden/" + name).toURI());
    JsonNode g = new ObjectMapper().readTree(dir.resolve("golden.json").toFile());
    int[] tokens = new int[g.get("tokens").size()];
    for (int i = 0; i < tokens.length; i++) tokens[i] = g.get("tokens").get(i).asInt();
    float[][] golden = new float[tokens.length][];
    for (int t = 0; t < tokens.length; t++) {
      JsonNode row = g.get("logits").get(t);
      golden[t] = new float[row.size()];
      for (int i = 0; i < row.size(); i++) golden[t][i] = (float) row.get(i).asDouble();
    }
    // auto keeps the checkpoint's 16-bit weights (BF16 Llama, F16 Qwen3); float32 widens them:
    // PyTorch computed in FP32 on the upcast weights, so both must match it
    for (String dtype : new String[] {"auto", "float32"})
      try (ModelRunner m = ModelRunners.open(dir, dtype, 16, 8)) {
        DType want =
            dtype.equals("float32") ? DType.F32 : name.equals("llama") ? DType.BF16 : DType.F16;
        assertEquals(want, ((CpuModelRunner) m).dtype());
        // generated rows of BF16 weights on oneDNN's arithmetic (bf16-gemm-decode-rows) round
        // their product inputs to BF16 as PyTorch's BF16 linear does: the scalar reference that
        // rounds them is then what the logits must be, within the same 1e-4
        float[][] expected = golden;
        if (((CpuModelRunner) m).generatedRowsOnOneDnnFrom() > 0)
          try (WeightSource w = SafetensorsWeights.open(dir)) {
            expected =
                new ScalarReferenceModel(ModelConfigs.read(dir), w, true, true).logits(tokens);
          }
        int[] table = {5, 2, 9, 0, 7, 1};
        int split = 25;
        float[][] prefill =
            m.forward(List.of(new SequenceChunk(Arrays.copyOf(tokens, split), 0, table, true)))
                .get(0);
        for (int t = 0; t < split; t++)
          assertClose(expected[t], prefill[t], name + " prefill position " + t);
        for (int t = split; t < tokens.length; t++) {
          float[] l =
              m.forward(List.of(new SequenceChunk(new int[] {tokens[t]}, t, table, false)))
                  .get(0)[0];
          assertClose(expected[t], l, name + " " + dtype + " decode position " + t);
        }
      }
    // the scalar reference used by the other tests agrees with PyTorch too
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      float[][] ref = new ScalarReferenceModel(ModelConfigs.read(dir), w).logits(tokens);
      for (int t = 0; t < tokens.length; t++)
        assertClose(golden[t], ref[t], name + " reference position " + t);
    }
  }

  private static void assertClose(float[] expected, float[] actual, String what) {
    assertEquals(expected.length, actual.length, what);
    float d = CpuModelRunnerTest.maxDiff(expected, actual);
    assertTrue(d <= 1e-4, what + ": max |Δlogit| " + d);
  }
}

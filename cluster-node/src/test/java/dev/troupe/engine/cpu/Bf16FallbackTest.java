package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.cuda.ForkedJvm;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.ScalarReferenceModel;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Where the CPU has no BF16 dot-product instructions, {@link Bf16Gemm} is not chosen and BF16
 * prefill products run on OpenBLAS over FP32 tiles. A forked JVM caps what oneDNN may use with its
 * {@code ONEDNN_MAX_CPU_ISA} (read once, when oneDNN loads): at {@code AVX512_CORE} (no
 * AVX512_BF16) oneDNN offers only its reference matmul, at {@code AVX2} none for our weight layout;
 * {@code -Dtroupe.engine.bf16Gemm=false} turns the path off. In each case the golden Llama (BF16)
 * prompt, in a step over 64 rows (the GEMM path), must match the FP32 scalar reference as the FP32
 * path does (within 1e-4; oneDNN's BF16-rounded activations put it 1.35e-2 away), beside either of
 * two companion sequences (OpenBLAS blocks a product by its row count: not bit for bit).
 */
class Bf16FallbackTest {
  @TempDir Path tmp;

  @ParameterizedTest
  @CsvSource({"AVX512_CORE, true", "AVX2, true", "DEFAULT, false"})
  void bf16PrefillFallsBackToFp32Blas(String isa, boolean gemmOn) throws Exception {
    Path golden = Path.of(Bf16FallbackTest.class.getResource("/golden/llama").toURI());
    Map<String, String> env = new HashMap<>();
    env.put("ONEDNN_MAX_CPU_ISA", isa);
    ForkedJvm run =
        ForkedJvm.run(
            ForkedJvm.classpath(s -> false),
            env,
            List.of(
                "--add-modules",
                "jdk.incubator.vector",
                "-Xmx512m",
                "-Dtroupe.engine.bf16Gemm=" + gemmOn),
            tmp.resolve("child.log"),
            Check.class,
            golden.toString());
    assertEquals(0, run.exitCode(), run.output());
    assertTrue(run.output().contains("BF16 prefill products on OpenBLAS (FP32)"), run.output());
    assertTrue(run.output().contains("fallback ok"), run.output());
  }

  /** The forked JVM: the selection, then the golden prompt's logits on whatever was selected. */
  public static final class Check {
    public static void main(String[] args) throws Exception {
      Path dir = Path.of(args[0]);
      if (Bf16Gemm.available()) fail("oneDNN's BF16 matmul was chosen");
      int[] tokens = GoldenPrompt.tokens(GoldenPrompt.read(dir));
      float[][] ref;
      try (WeightSource w = SafetensorsWeights.open(dir)) {
        ref = new ScalarReferenceModel(ModelConfigs.read(dir), w).logits(tokens);
      }
      float[][] a, b;
      try (ModelRunner m = ModelRunners.open(dir, "auto", 32, 8)) {
        a = GoldenPrompt.withCompanion(m, tokens, 30, 3);
        b = GoldenPrompt.withCompanion(m, tokens, 50, 17);
      }
      double diff = 0, companions = 0;
      for (int t = 0; t < tokens.length; t++)
        for (int i = 0; i < ref[t].length; i++) {
          diff =
              Math.max(
                  diff, Math.max(Math.abs(a[t][i] - ref[t][i]), Math.abs(b[t][i] - ref[t][i])));
          companions = Math.max(companions, Math.abs(a[t][i] - b[t][i]));
        }
      if (diff > 1e-4) fail("max |Δ| to the FP32 reference " + diff);
      if (companions > 1e-4) fail("max |Δ| between the two companions " + companions);
      System.out.printf(
          "fallback ok: max |Δ| to the FP32 reference %.2e, between companions %.2e%n",
          diff, companions);
    }

    private static void fail(String why) {
      System.out.println("FAILED: " + why);
      System.exit(1);
    }
  }
}

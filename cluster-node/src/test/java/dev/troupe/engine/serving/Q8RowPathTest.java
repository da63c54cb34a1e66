package dev.troupe.engine.serving;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.DemoModel;
import dev.troupe.engine.model.Quantization;
import dev.troupe.engine.model.RandomWeights;
import dev.troupe.engine.testing.TinyModels;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link Bf16RowPathTest}'s properties with {@code --quantization q8_0}: prompt rows on oneDNN from
 * the 8-bit matrices' BF16 form, generated rows on the 8-bit kernels however many, and still a
 * resumed request continues token for token, a request among many decodes as alone, and another
 * request's prefills beside it leave its tokens as they are alone.
 */
class Q8RowPathTest extends Bf16RowPathTest {
  /** Runs after the superclass's: the same random Llama, served 8-bit. */
  @BeforeAll
  static void openQuantizedRunner() {
    if (runner != null) runner.close();
    ModelConfig c = TinyModels.llama(DemoModel.config().vocabSize(), 128, 2, 4, 2, 256);
    runner =
        CpuModelRunner.load(
            c, new RandomWeights(c, 27, 0.05, "random"), DType.BF16, Quantization.Q8_0, 160, 16);
    org.junit.jupiter.api.Assertions.assertEquals(Quantization.Q8_0, runner.quantization());
    Assumptions.assumeTrue(runner.promptRowsOnOneDnn(), "prompt rows are not on oneDNN here");
  }
}

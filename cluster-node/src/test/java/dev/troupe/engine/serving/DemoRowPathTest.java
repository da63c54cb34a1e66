package dev.troupe.engine.serving;

import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.DemoModel;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link Bf16RowPathTest}'s properties on the demo model (Qwen3 layout: q/k norms, tied
 * embeddings), served BF16: where the seeded resumed request first showed re-prefilled generated
 * tokens attending on the BLAS GEMMs.
 */
class DemoRowPathTest extends Bf16RowPathTest {
  /** Runs after the superclass's: the demo model in place of the random Llama. */
  @BeforeAll
  static void openDemoRunner() {
    if (runner != null) runner.close();
    runner = CpuModelRunner.load(DemoModel.config(), DemoModel.weights(), DType.BF16, 160, 16);
    Assumptions.assumeTrue(runner.promptRowsOnOneDnn(), "prompt rows are not on oneDNN here");
  }
}

package dev.troupe.engine.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.runner.ModelRunners;
import dev.troupe.engine.testing.TinyModels;
import dev.troupe.engine.testing.TinyModels.Arch;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The start-up warm-up runs every shape and leaves nothing a request could see. */
class WarmupTest {
  @TempDir Path tmp;

  @Test
  void warmUpRunsEveryShapeAndLeavesNoTraceInLaterResults() throws Exception {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.QWEN3, DType.BF16, 5, false);
    int[] prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};
    int[] table = {0, 1, 2, 3}; // the blocks the warm-up used too
    try (ModelRunner cold = ModelRunners.open(dir, "auto", 64, 4);
        ModelRunner warm = ModelRunners.open(dir, "auto", 64, 4)) {
      // a prefill and the decode batches 1..32 per round; a tiny model finishes all rounds
      int steps = Warmup.run(warm, "tiny", 32, 2048, 60_000);
      assertEquals(Warmup.ROUNDS * 7, steps);
      for (ModelRunner m : List.of(cold, warm)) assertEquals(64, m.numBlocks());
      float[][] a = cold.forward(List.of(new SequenceChunk(prompt, 0, table, true))).get(0);
      float[][] b = warm.forward(List.of(new SequenceChunk(prompt, 0, table, true))).get(0);
      for (int t = 0; t < prompt.length; t++) assertArrayEquals(a[t], b[t], "position " + t);
      float[] da =
          cold.forward(List.of(new SequenceChunk(new int[] {7}, 14, table, false))).get(0)[0];
      float[] db =
          warm.forward(List.of(new SequenceChunk(new int[] {7}, 14, table, false))).get(0)[0];
      assertArrayEquals(da, db, "decode after the prompt");
    }
  }

  @Test
  void aBudgetOfZeroRunsNothingAndBatchesStopAtTheSequenceLimit() throws Exception {
    Path dir = TinyModels.write(tmp.resolve("m"), Arch.LLAMA, DType.F32, 6, false);
    try (ModelRunner m = ModelRunners.open(dir, "auto", 64, 4)) {
      assertEquals(0, Warmup.run(m, "tiny", 32, 2048, 0));
      // max-num-seqs 4: decode batches 1, 2, 4 only
      int steps = Warmup.run(m, "tiny", 4, 2048, 60_000);
      assertEquals(Warmup.ROUNDS * 4, steps);
      assertTrue(steps > 0);
    }
  }
}

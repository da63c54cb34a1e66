package dev.troupe.engine.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Per-token logprob details of {@link BeamSearch}, including beams that end in EOS. */
class BeamSearchLogprobsTest {
  private static final int VOCAB = 6, EOS = 0;

  /** Logits that depend on the last token and the position, from a fixed random table. */
  private static float[] logits(float[][][] table, int[] generated) {
    int last = generated.length == 0 ? 1 : generated[generated.length - 1];
    return table[generated.length][last].clone();
  }

  private static List<BeamSearch.Result> run(float[][][] table, boolean includeStop, Integer k) {
    BeamSearch bs = new BeamSearch(2, 6, 3, EOS, false, 1.0, includeStop, k);
    while (!bs.done()) {
      List<float[]> rows = new ArrayList<>();
      for (BeamSearch.Beam b : bs.live()) rows.add(logits(table, b.tokens()));
      bs.step(rows);
    }
    return bs.results();
  }

  @Test
  void detailsFollowTheReportedTokensWithOrWithoutTheEos() {
    Random r = new Random(7);
    int stops = 0;
    for (int trial = 0; trial < 40; trial++) {
      float[][][] table = new float[7][VOCAB][VOCAB];
      for (float[][] pos : table)
        for (float[] row : pos)
          for (int i = 0; i < VOCAB; i++) row[i] = (float) (r.nextGaussian() * 2);
      for (boolean includeStop : new boolean[] {false, true}) {
        for (BeamSearch.Result res : run(table, includeStop, null)) assertNull(res.details());
        List<BeamSearch.Result> plain = run(table, includeStop, null);
        List<BeamSearch.Result> results = run(table, includeStop, 2);
        assertEquals(plain.size(), results.size());
        for (int b = 0; b < results.size(); b++) {
          BeamSearch.Result res = results.get(b);
          // Keeping details does not change the search.
          assertEquals(
              java.util.Arrays.toString(plain.get(b).tokens()),
              java.util.Arrays.toString(res.tokens()));
          if (res.finishReason() == FinishReason.STOP) stops++;
          assertEquals(res.tokens().length, res.details().size());
          for (int t = 0; t < res.tokens().length; t++) {
            float[] row = logits(table, java.util.Arrays.copyOf(res.tokens(), t));
            double lse = Logprobs.logSumExp(row, 0, VOCAB);
            StepLogprobs d = res.details().get(t);
            assertEquals(res.tokens()[t], d.chosen().tokenId());
            assertEquals(row[res.tokens()[t]] - lse, d.chosen().logprob(), 1e-5);
            assertEquals(res.logprobs()[t], d.chosen().logprob(), 1e-6);
            assertEquals(2, d.top().size());
            assertTrue(row[d.top().get(0).tokenId()] >= row[d.top().get(1).tokenId()]);
            for (float v : row) assertTrue(v <= row[d.top().get(0).tokenId()]);
            assertEquals(1, d.top().get(0).rank());
            assertEquals(2, d.top().get(1).rank());
          }
        }
      }
    }
    assertTrue(stops > 0, "some beams ended in EOS");
  }
}

package dev.troupe.engine.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The structured-output seam: a choice's {@link TokenConstraint} masks its row after every other
 * processor and sees every token the choice appends; raw logprobs never show the mask.
 */
class TokenConstraintTest {
  private static final int V = 40;

  /** Allows even ids only; records what it is told. */
  private static final class EvenOnly implements TokenConstraint {
    final List<Integer> accepted = new ArrayList<>();

    @Override
    public void mask(float[] logits) {
      for (int i = 1; i < logits.length; i += 2) logits[i] = Float.NEGATIVE_INFINITY;
    }

    @Override
    public void accept(int token) {
      accepted.add(token);
    }
  }

  @Test
  void theConstraintHasTheLastWordBeforeThePick() {
    SamplerFactory f = new SamplerFactory(V, null, new EosTokens(-1, Set.of()), null);
    Random r = new Random(3);
    for (boolean greedy : new boolean[] {true, false}) {
      Params p = new Params();
      p.temperature = greedy ? 0.0 : 1.0;
      p.logprobs = 0;
      p.seed = 5L;
      p.logitBias = Map.of(7, 100.0); // an odd token every processor before the mask favours
      var params = p.build();
      EvenOnly even = new EvenOnly();
      SamplingSetup setup = f.prepare(params).withConstraints(List.of(even));
      Sampler s = f.create(params, setup, new int[] {1, 2}, 0);
      for (int step = 0; step < 20; step++) {
        float[] row = new float[V];
        for (int i = 0; i < V; i++) row[i] = (float) r.nextGaussian();
        Sample x = s.next(row);
        assertEquals(0, x.token() % 2, "greedy " + greedy + " step " + step);
        // raw logprobs: the unmasked row's
        double lse = Logprobs.logSumExp(row, 0, V);
        assertEquals(row[x.token()] - lse, x.logprob(), 1e-4);
        s.accept(x.token());
      }
      assertEquals(20, even.accepted.size());
      assertTrue(even.accepted.stream().allMatch(t -> t % 2 == 0));
    }
  }

  @Test
  void oneConstraintPerChoice() {
    SamplerFactory f = new SamplerFactory(V, null, new EosTokens(-1, Set.of()), null);
    Params p = new Params();
    p.n = 2;
    SamplingSetup setup = f.prepare(p.build());
    assertThrows(IllegalArgumentException.class, () -> setup.withConstraints(List.of()));
  }
}

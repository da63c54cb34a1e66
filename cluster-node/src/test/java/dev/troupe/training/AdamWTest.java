package dev.troupe.training;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class AdamWTest {

  @Test
  void firstStepMovesEachParameterByLrTimesSignAfterDecay() {
    AdamW opt = new AdamW(new AdamW.Hyper(0.9, 0.99, 1e-8, 0.1, 0));
    double[] p = {1.0, -2.0};
    double norm = opt.update(Map.of("w", p), Map.of("w", new double[] {0.5, -3}), 0.01, Set.of());
    assertEquals(Math.sqrt(0.25 + 9), norm, 1e-12);
    // decoupled decay first: p(1 - lr·wd); then the bias-corrected step is lr·g/|g|
    assertEquals(1.0 * (1 - 0.001) - 0.01 * 0.5 / (0.5 + 1e-8), p[0], 1e-12);
    assertEquals(-2.0 * (1 - 0.001) + 0.01 * 3 / (3 + 1e-8), p[1], 1e-12);
  }

  @Test
  void secondStepMatchesHandComputedMoments() {
    AdamW opt = new AdamW(new AdamW.Hyper(0.9, 0.99, 1e-8, 0.0, 0));
    double[] p = {0.0};
    opt.update(Map.of("w", p), Map.of("w", new double[] {1.0}), 0.1, Set.of());
    opt.update(Map.of("w", p), Map.of("w", new double[] {-2.0}), 0.1, Set.of());
    double m = 0.9 * 0.1 + 0.1 * -2.0; // m1 = 0.1
    double v = 0.99 * 0.01 + 0.01 * 4.0; // v1 = 0.01
    double step2 = 0.1 * (m / (1 - 0.81)) / (Math.sqrt(v / (1 - 0.9801)) + 1e-8);
    assertEquals(-0.1 * 1 / (1 + 1e-8) - step2, p[0], 1e-12);
    assertEquals(2, opt.step());
  }

  @Test
  void clipsGlobalNormAndSkipsDecayWhereAsked() {
    AdamW opt = new AdamW(new AdamW.Hyper(0.0, 0.0, 1e-8, 0.5, 0.1));
    // beta 0 makes the step lr·g/|g| per element; clipping scales g but not its sign, so check m
    double[] a = {1.0};
    double[] b = {1.0};
    double norm =
        opt.update(
            Map.of("a", a, "b", b),
            Map.of("a", new double[] {3.0}, "b", new double[] {4.0}),
            0.1,
            Set.of("b"));
    assertEquals(5.0, norm, 1e-12);
    assertEquals(1.0 * (1 - 0.05) - 0.1 * 0.06 / (0.06 + 1e-8), a[0], 1e-9);
    assertEquals(1.0 - 0.1 * 0.08 / (0.08 + 1e-8), b[0], 1e-9);
    AdamW.State s = opt.state();
    assertEquals(3.0 * 0.1 / (5 + 1e-6), Math.sqrt(s.v().get("a")[0]), 1e-12);
  }
}

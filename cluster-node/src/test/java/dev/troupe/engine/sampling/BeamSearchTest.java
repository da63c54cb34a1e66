package dev.troupe.engine.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class BeamSearchTest {

  /**
   * A tiny "model": the next-token logits depend on the last token, plus (in random tables) a
   * per-position term so that different orders of the same tokens do not tie.
   */
  private record Table(float[][] next, int start, float[][] byPosition) {
    Table(float[][] next, int start) {
      this(next, start, null);
    }

    float[] logits(List<Integer> generated) {
      int last = generated.isEmpty() ? start : generated.get(generated.size() - 1);
      float[] row = next[last].clone();
      if (byPosition != null)
        for (int i = 0; i < row.length; i++) row[i] += byPosition[generated.size()][i];
      return row;
    }
  }

  private static Table randomTable(Random r, int vocab) {
    float[][] t = new float[vocab][vocab];
    for (float[] row : t) for (int i = 0; i < vocab; i++) row[i] = (float) (r.nextGaussian() * 2);
    float[][] pos = new float[16][vocab];
    for (float[] row : pos) for (int i = 0; i < vocab; i++) row[i] = (float) r.nextGaussian();
    return new Table(t, r.nextInt(vocab), pos);
  }

  private static List<BeamSearch.Result> drive(BeamSearch bs, Table table) {
    int guard = 0;
    while (!bs.done()) {
      List<float[]> rows = new ArrayList<>();
      for (BeamSearch.Beam b : bs.live()) rows.add(table.logits(toList(b.tokens())));
      List<BeamSearch.Beam> before = bs.live();
      List<BeamSearch.Beam> after = bs.step(rows);
      for (BeamSearch.Beam child : after) {
        // each child extends its parent by exactly one token
        int[] parent = before.get(child.parent()).tokens();
        assertEquals(parent.length + 1, child.tokens().length);
        for (int i = 0; i < parent.length; i++) assertEquals(parent[i], child.tokens()[i]);
      }
      if (++guard > 100) throw new AssertionError("no progress");
    }
    return bs.results();
  }

  private static List<Integer> toList(int[] a) {
    List<Integer> l = new ArrayList<>();
    for (int v : a) l.add(v);
    return l;
  }

  /** Independent transcription of vLLM's beam_search loop over plain lists. */
  private record Seq(List<Integer> tokens, double cum, String finish) {}

  private static List<Seq> reference(
      Table table,
      int width,
      int maxTokens,
      int prompt,
      int eos,
      boolean ignoreEos,
      double penalty,
      boolean include) {
    Comparator<Seq> byScore =
        Comparator.comparingDouble((Seq s) -> score(s.tokens, s.cum, prompt, eos, penalty))
            .reversed();
    List<Seq> beams = new ArrayList<>(List.of(new Seq(List.of(), 0, null)));
    List<Seq> done = new ArrayList<>();
    for (int step = 0; step < maxTokens; step++) {
      List<Seq> next = new ArrayList<>();
      for (Seq beam : beams) {
        double[] lp = ReferenceSampling.logSoftmax(table.logits(beam.tokens));
        Integer[] order = new Integer[lp.length];
        for (int i = 0; i < lp.length; i++) order[i] = i;
        java.util.Arrays.sort(order, (a, b) -> Double.compare(lp[b], lp[a]));
        for (int j = 0; j < Math.min(2 * width, lp.length); j++) {
          int t = order[j];
          List<Integer> ext = new ArrayList<>(beam.tokens);
          ext.add(t);
          double cum = beam.cum + (float) lp[t];
          if (t == eos && !ignoreEos) done.add(new Seq(include ? ext : beam.tokens, cum, "stop"));
          else next.add(new Seq(ext, cum, null));
        }
      }
      next.sort(byScore);
      beams = next.subList(0, Math.min(width, next.size()));
    }
    List<Seq> all = new ArrayList<>(done);
    for (Seq b : beams) all.add(new Seq(b.tokens, b.cum, "length"));
    all.sort(byScore);
    return all.subList(0, Math.min(width, all.size()));
  }

  private static double score(
      List<Integer> tokens, double cum, int prompt, int eos, double penalty) {
    int len = prompt + tokens.size();
    if (!tokens.isEmpty() && tokens.get(tokens.size() - 1) == eos) len--;
    return cum / Math.pow(len, penalty);
  }

  @Test
  void matchesTheReferenceLoopOnRandomTables() {
    Random r = new Random(21);
    for (int trial = 0; trial < 300; trial++) {
      int vocab = 3 + r.nextInt(5);
      Table table = randomTable(r, vocab);
      int width = 1 + r.nextInt(3);
      int maxTokens = 1 + r.nextInt(6);
      int prompt = 1 + r.nextInt(5);
      int eos = r.nextInt(vocab);
      boolean ignoreEos = r.nextInt(4) == 0;
      boolean include = r.nextBoolean();
      double penalty = r.nextDouble() * 2 - 0.5;
      BeamSearch bs = new BeamSearch(width, maxTokens, prompt, eos, ignoreEos, penalty, include);
      List<BeamSearch.Result> got = drive(bs, table);
      List<Seq> want = reference(table, width, maxTokens, prompt, eos, ignoreEos, penalty, include);
      assertEquals(want.size(), got.size(), "trial " + trial);
      for (int i = 0; i < want.size(); i++) {
        assertEquals(want.get(i).tokens, toList(got.get(i).tokens()), "trial " + trial + " #" + i);
        assertEquals(want.get(i).cum, got.get(i).cumLogprob(), 1e-9);
        assertEquals(
            want.get(i).finish,
            got.get(i).finishReason().name().toLowerCase(java.util.Locale.ROOT));
      }
    }
  }

  @Test
  void wideEnoughSearchIsExhaustiveAndEqualsBruteForce() {
    Random r = new Random(5);
    for (int trial = 0; trial < 30; trial++) {
      int vocab = 3; // token 0 is EOS
      Table table = randomTable(r, vocab);
      int maxTokens = 3, prompt = 4, width = 8; // 2^3 live prefixes at most: nothing is pruned
      double penalty = 1.0 + r.nextDouble();
      // brute force: every EOS-terminated sequence up to maxTokens and every full-length one
      List<Seq> all = new ArrayList<>();
      enumerate(table, new ArrayList<>(), 0.0, maxTokens, all);
      all.sort(
          Comparator.comparingDouble((Seq s) -> score(s.tokens, s.cum, prompt, 0, penalty))
              .reversed());
      List<BeamSearch.Result> got =
          drive(new BeamSearch(width, maxTokens, prompt, 0, false, penalty, true), table);
      assertEquals(width, got.size());
      for (int i = 0; i < width; i++) {
        assertEquals(all.get(i).tokens, toList(got.get(i).tokens()), "trial " + trial + " #" + i);
        assertEquals(
            score(all.get(i).tokens, all.get(i).cum, prompt, 0, penalty), got.get(i).score(), 1e-9);
      }
    }
  }

  private static void enumerate(Table t, List<Integer> prefix, double cum, int max, List<Seq> out) {
    if (prefix.size() == max) {
      out.add(new Seq(List.copyOf(prefix), cum, "length"));
      return;
    }
    double[] lp = ReferenceSampling.logSoftmax(t.logits(prefix));
    for (int tok = 0; tok < lp.length; tok++) {
      List<Integer> ext = new ArrayList<>(prefix);
      ext.add(tok);
      double c = cum + (float) lp[tok];
      if (tok == 0) out.add(new Seq(ext, c, "stop"));
      else enumerate(t, ext, c, max, out);
    }
  }

  @Test
  void beamFindsWhatGreedyMisses() {
    // from the start, token 1 (p .6) beats 2 (p .4); after 1 everything is flat, after 2 token 3
    // is near-certain: width 2 keeps "2" alive and "2 3" wins.
    float[][] t = new float[5][5];
    float ln6 = (float) Math.log(0.6), ln4 = (float) Math.log(0.4), none = -30f;
    t[4] = new float[] {none, ln6, ln4, none, none};
    t[1] = new float[] {none, -1.3863f, -1.3863f, -1.3863f, -1.3863f}; // 4 x 0.25
    t[2] = new float[] {none, none, none, 0f, none};
    t[3] = new float[] {0f, 0f, 0f, 0f, 0f};
    Table table = new Table(t, 4);
    List<BeamSearch.Result> greedy = drive(new BeamSearch(1, 2, 3, 0, false, 1.0, false), table);
    assertEquals(List.of(1, 1), toList(greedy.get(0).tokens()));
    List<BeamSearch.Result> beam = drive(new BeamSearch(2, 2, 3, 0, false, 1.0, false), table);
    assertArrayEquals(new int[] {2, 3}, beam.get(0).tokens());
    assertEquals(Math.log(0.4), beam.get(0).cumLogprob(), 1e-4);
    assertEquals(Math.log(0.4) / 5, beam.get(0).score(), 1e-4); // L = 3 prompt + 2 generated
    assertEquals(FinishReason.LENGTH, beam.get(0).finishReason());
    assertNull(beam.get(0).stopTokenId());
  }

  @Test
  void eosCompletesABeamAndIsLeftOutOfTheText() {
    float[][] t = new float[3][3];
    t[2] = new float[] {0f, -5f, -30f}; // EOS most likely at once
    t[1] = new float[] {-30f, 0f, -30f};
    Table table = new Table(t, 2);
    List<BeamSearch.Result> r = drive(new BeamSearch(1, 4, 2, 0, false, 1.0, true), table);
    assertArrayEquals(new int[] {0}, r.get(0).tokens());
    assertArrayEquals(new int[0], r.get(0).textTokens());
    assertEquals(0, r.get(0).stopTokenId());
    assertEquals("stop", r.get(0).finishReason().name().toLowerCase(java.util.Locale.ROOT));
    // ignore_eos: EOS is an ordinary token and the beam runs to max_tokens
    r = drive(new BeamSearch(1, 3, 2, 0, true, 1.0, false), table);
    assertEquals(3, r.get(0).tokens().length);
    assertEquals(FinishReason.LENGTH, r.get(0).finishReason());
  }
}

package dev.troupe.engine.sampling;

import dev.troupe.protocol.cluster.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * vLLM's beam search ({@code EngineClient.beam_search}) as a driver an engine steps.
 *
 * <p>Width = {@code n}. Each step takes the raw logits of every live beam, expands each with its
 * {@code 2 × width} most likely tokens (raw logprobs, so temperature and every other sampling
 * control have no effect, as in vLLM V1's default {@code raw_logprobs} mode), moves candidates
 * ending in EOS to the completed list (unless {@code ignore_eos}; the EOS token is kept only with
 * {@code include_stop_str_in_output}), and keeps the best {@code width} of the rest by score
 * (cumulative logprob, as they all have the same length, except that under {@code ignore_eos} a
 * trailing EOS counts one token less). After {@code max_tokens} steps (or when no beam is left)
 * completed and live beams are ranked by {@code cum_logprob / L^length_penalty}, L = prompt +
 * generated tokens minus a trailing EOS, and the best {@code width} are the result. Ties keep
 * vLLM's stable order (beam order, then token rank; completed before live).
 *
 * <p>Engine contract: {@link #live()} lists the beams to run; after a forward pass call {@link
 * #step(List)} with one logits row per live beam in that order. Every new live beam names its
 * {@link Beam#parent()} (an index into the previous live list) and extends it by its last token:
 * the engine forks the parent's KV blocks (shared, copy-on-write) for each child, frees parents no
 * child names, and feeds each child's last token next. Not thread-safe.
 *
 * <p>Deviation: vLLM's per-beam candidate dictionary also contains the token its (random) sampler
 * drew, which can add one low-ranked candidate per beam; here candidates are exactly the top 2 ×
 * width, which is what vLLM does whenever sampling is greedy.
 *
 * <p>Logprobs: with {@code topLogprobs} set (the request's {@code logprobs}), every beam also
 * carries, per token, the chosen token's raw logprob and rank and the step's top {@code
 * topLogprobs} alternatives by rank (computed from the same raw row). That is vLLM's order for a
 * beam: its per-step dictionary is the parent's greedy sample followed by the top entries, i.e.
 * ranks 1, 2, ... Without it nothing is kept beyond the float logprobs.
 */
public final class BeamSearch {

  private final int width;
  private final int maxTokens;
  private final int promptLength;
  private final int eosTokenId;
  private final boolean ignoreEos;
  private final double lengthPenalty;
  private final boolean includeStop;

  /** Alternatives per token to keep (negative: the whole row); null: no per-token details. */
  private final Integer topLogprobs;

  private List<Beam> live;
  private final List<Result> completed = new ArrayList<>();
  private int steps;

  public BeamSearch(
      int width,
      int maxTokens,
      int promptLength,
      int eosTokenId,
      boolean ignoreEos,
      double lengthPenalty,
      boolean includeStopStrInOutput) {
    this(
        width,
        maxTokens,
        promptLength,
        eosTokenId,
        ignoreEos,
        lengthPenalty,
        includeStopStrInOutput,
        null);
  }

  /**
   * @param topLogprobs when not null, each beam also records per token its {@link StepLogprobs}
   *     with this many alternatives (negative: the whole vocabulary)
   */
  public BeamSearch(
      int width,
      int maxTokens,
      int promptLength,
      int eosTokenId,
      boolean ignoreEos,
      double lengthPenalty,
      boolean includeStopStrInOutput,
      Integer topLogprobs) {
    if (width < 1) throw new IllegalArgumentException("beam width must be at least 1");
    if (maxTokens < 0 || promptLength < 0) throw new IllegalArgumentException("negative length");
    this.width = width;
    this.maxTokens = maxTokens;
    this.promptLength = promptLength;
    this.eosTokenId = eosTokenId;
    this.ignoreEos = ignoreEos;
    this.lengthPenalty = lengthPenalty;
    this.includeStop = includeStopStrInOutput;
    this.topLogprobs = topLogprobs;
    live =
        maxTokens == 0
            ? List.of()
            : List.of(
                new Beam(
                    -1, new int[0], 0.0, new float[0], topLogprobs == null ? null : List.of()));
  }

  /** A search for a request with {@code useBeamSearch}: width n, its max_tokens and flags. */
  public static BeamSearch create(SamplingParams params, int promptLength, EosTokens eos) {
    return new BeamSearch(
        params.n(),
        params.maxTokens(),
        promptLength,
        eos.eosTokenId(),
        params.ignoreEos(),
        params.lengthPenalty(),
        params.includeStopStrInOutput(),
        params.logprobs());
  }

  /** The beams whose next-token logits {@link #step} needs, in order; empty when done. */
  public List<Beam> live() {
    return done() ? List.of() : live;
  }

  public boolean done() {
    return live.isEmpty() || steps >= maxTokens;
  }

  public int steps() {
    return steps;
  }

  /**
   * Expands every live beam with its logits row ({@code logits.get(i)} for {@code live().get(i)})
   * and returns the new live beams.
   */
  public List<Beam> step(List<float[]> logits) {
    if (done()) throw new IllegalStateException("beam search is done");
    if (logits.size() != live.size())
      throw new IllegalArgumentException(
          "expected " + live.size() + " logits rows, got " + logits.size());
    List<Beam> candidates = new ArrayList<>();
    for (int b = 0; b < live.size(); b++) {
      Beam beam = live.get(b);
      float[] row = logits.get(b);
      double lse = Logprobs.logSumExp(row, 0, row.length);
      int[] top = new int[Math.min(2 * width, row.length)];
      int count = Logprobs.topK(row, 0, row.length, top.length, top);
      List<TokenLogprob> alternatives = topLogprobs == null ? null : alternatives(row, lse);
      for (int j = 0; j < count; j++) {
        int token = top[j];
        float lp = (float) (row[token] - lse);
        double cum = beam.cumLogprob() + lp;
        // Candidates come from the top 2 × width, so the j-th has rank j + 1.
        List<StepLogprobs> details =
            alternatives == null
                ? null
                : append(
                    beam.details(),
                    new StepLogprobs(
                        new TokenLogprob(token, Logprobs.logprob(row[token], lse), j + 1),
                        alternatives));
        if (token == eosTokenId && !ignoreEos) {
          int[] tokens = includeStop ? append(beam.tokens(), token) : beam.tokens();
          float[] lps = includeStop ? append(beam.logprobs(), lp) : beam.logprobs();
          List<StepLogprobs> kept = includeStop ? details : beam.details();
          completed.add(result(tokens, cum, lps, kept, FinishReason.STOP, token));
        } else {
          candidates.add(
              new Beam(b, append(beam.tokens(), token), cum, append(beam.logprobs(), lp), details));
        }
      }
    }
    // Ranked by the final score like vLLM (same as by cum_logprob except that, under ignore_eos,
    // a candidate ending in EOS counts one token less); stable like Python's sorted().
    candidates.sort(
        Comparator.comparingDouble((Beam c) -> score(c.tokens(), c.cumLogprob())).reversed());
    live = List.copyOf(candidates.subList(0, Math.min(width, candidates.size())));
    steps++;
    return live();
  }

  /** The top {@code topLogprobs} entries of a row by rank (ranks 1..k), shared by its children. */
  private List<TokenLogprob> alternatives(float[] row, double lse) {
    int k = topLogprobs < 0 || topLogprobs > row.length ? row.length : topLogprobs;
    int[] ids = new int[k];
    int count = Logprobs.topK(row, 0, row.length, k, ids);
    List<TokenLogprob> out = new ArrayList<>(count);
    for (int j = 0; j < count; j++)
      out.add(new TokenLogprob(ids[j], Logprobs.logprob(row[ids[j]], lse), j + 1));
    return List.copyOf(out);
  }

  /** The best {@code width} finished sequences, best first. Call once {@link #done()}. */
  public List<Result> results() {
    if (!done()) throw new IllegalStateException("beam search is still running");
    List<Result> all = new ArrayList<>(completed);
    for (Beam b : live)
      all.add(
          result(b.tokens(), b.cumLogprob(), b.logprobs(), b.details(), FinishReason.LENGTH, null));
    all.sort(Comparator.comparingDouble(Result::score).reversed());
    return List.copyOf(all.subList(0, Math.min(width, all.size())));
  }

  private Result result(
      int[] tokens,
      double cum,
      float[] logprobs,
      List<StepLogprobs> details,
      FinishReason reason,
      Integer stopToken) {
    return new Result(
        tokens,
        cum,
        score(tokens, cum),
        logprobs,
        details,
        reason,
        stopToken,
        ignoreEos ? -1 : eosTokenId);
  }

  /** vLLM's {@code get_beam_search_score}: the prompt counts, a trailing EOS does not. */
  double score(int[] generated, double cumLogprob) {
    int length = promptLength + generated.length;
    if (generated.length > 0 && generated[generated.length - 1] == eosTokenId) length--;
    return cumLogprob / Math.pow(length, lengthPenalty);
  }

  private static int[] append(int[] a, int v) {
    int[] out = Arrays.copyOf(a, a.length + 1);
    out[a.length] = v;
    return out;
  }

  private static float[] append(float[] a, float v) {
    float[] out = Arrays.copyOf(a, a.length + 1);
    out[a.length] = v;
    return out;
  }

  private static List<StepLogprobs> append(List<StepLogprobs> a, StepLogprobs v) {
    List<StepLogprobs> out = new ArrayList<>(a.size() + 1);
    out.addAll(a);
    out.add(v);
    return List.copyOf(out);
  }

  /**
   * A live beam.
   *
   * @param parent index of the beam it extends in the previous {@link #live()} list (-1: the
   *     prompt)
   * @param tokens generated tokens; the last one is the token to feed next
   * @param cumLogprob sum of the raw logprobs of {@code tokens}
   * @param logprobs the raw logprob of each token
   * @param details per token, when the search keeps logprob details; else null
   */
  public record Beam(
      int parent, int[] tokens, double cumLogprob, float[] logprobs, List<StepLogprobs> details) {}

  /**
   * A finished sequence.
   *
   * @param tokens generated token ids as reported in {@code token_ids} (a final EOS only with
   *     {@code include_stop_str_in_output})
   * @param cumLogprob sum of raw logprobs (including the EOS step's)
   * @param score the ranking score
   * @param logprobs per reported token
   * @param details per reported token, when the search keeps logprob details; else null
   * @param finishReason {@code stop} (EOS) or {@code length}
   * @param stopTokenId the EOS id for {@code stop}, else null (vLLM reports it as stop_reason)
   * @param textEosId tokens equal to this id at the end are left out of the text (-1: none)
   */
  public record Result(
      int[] tokens,
      double cumLogprob,
      double score,
      float[] logprobs,
      List<StepLogprobs> details,
      FinishReason finishReason,
      Integer stopTokenId,
      int textEosId) {

    /** The tokens to detokenize into the choice's text: a trailing EOS is skipped, as in vLLM. */
    public int[] textTokens() {
      if (tokens.length > 0 && textEosId >= 0 && tokens[tokens.length - 1] == textEosId)
        return Arrays.copyOf(tokens, tokens.length - 1);
      return tokens.clone();
    }
  }
}

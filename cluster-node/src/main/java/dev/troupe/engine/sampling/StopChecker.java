package dev.troupe.engine.sampling;

import dev.troupe.engine.Tokenizer;
import dev.troupe.protocol.cluster.SamplingParams;

/**
 * Decides when one choice ends and what text it has, as vLLM V1 does ({@code
 * v1/core/sched/utils.check_stop} + {@code v1/engine/detokenizer}), and what part of that text may
 * already be streamed.
 *
 * <p>Per generated token, in this order:
 *
 * <ol>
 *   <li>{@code max_tokens} reached → {@code length} (the token's text is kept);
 *   <li>before {@code min_tokens} outputs nothing else can stop;
 *   <li>EOS (unless {@code ignore_eos}) → {@code stop}, {@code stop_reason} null; a {@code
 *       stop_token_ids} id (plus generation-config EOS ids unless {@code ignore_eos}) → {@code
 *       stop}, {@code stop_reason} = the id. Such a final token is not detokenized into the text
 *       unless {@code include_stop_str_in_output};
 *   <li>stop strings, once more than {@code min_tokens} outputs exist, searched where the new text
 *       could complete one, in list order: the first listed string found wins; the text is cut
 *       before it (after it with {@code include_stop_str_in_output}); {@code stop_reason} = the
 *       string. This overrides a {@code length} finish of the same step, as in vLLM.
 * </ol>
 *
 * <p>Streaming: {@link Update#delta()} never includes text that a later stop string could cut, so
 * streamed text is never retracted. Unlike vLLM, which holds back a fixed {@code max(len(stop)) -
 * 1} characters, only the longest tail that is a proper prefix of some stop string is held back
 * (same concatenated text, earlier chunks). Not thread-safe: one per choice.
 */
public final class StopChecker {

  private final Tokenizer.IncrementalDetokenizer detokenizer;
  private final int maxTokens;
  private final int minTokens;
  private final boolean ignoreEos;
  private final boolean includeStop;
  private final int eosTokenId;
  private final java.util.Set<Integer> stopTokenIds;
  private final java.util.List<String> stops;

  private final StringBuilder text = new StringBuilder();
  private int streamed;
  private int outputLength;
  private Finish finish;

  public StopChecker(
      SamplingParams params, EosTokens eos, Tokenizer.IncrementalDetokenizer detokenizer) {
    this.detokenizer = detokenizer;
    this.maxTokens = params.maxTokens();
    this.minTokens = params.minTokens();
    this.ignoreEos = params.ignoreEos();
    this.includeStop = params.includeStopStrInOutput();
    this.eosTokenId = eos.eosTokenId();
    var ids = new java.util.HashSet<>(params.stopTokenIds());
    if (!ignoreEos) ids.addAll(eos.generationEosIds());
    this.stopTokenIds = java.util.Set.copyOf(ids);
    this.stops = params.stop().stream().filter(s -> !s.isEmpty()).toList();
  }

  /**
   * Records one generated token (every sampled token, in order) and returns the text that may be
   * streamed now plus, when this token ended the choice, why.
   */
  public Update append(int token) {
    if (finish != null) throw new IllegalStateException("choice already finished: " + finish);
    outputLength++;
    Finish tokenFinish = null;
    boolean stopTerminated = false;
    if (outputLength >= maxTokens) {
      tokenFinish = new Finish(FinishReason.LENGTH, null, null);
    } else if (outputLength >= minTokens) {
      if (!ignoreEos && token == eosTokenId && eosTokenId >= 0) {
        tokenFinish = new Finish(FinishReason.STOP, null, null);
        stopTerminated = true;
      } else if (stopTokenIds.contains(token)) {
        tokenFinish = new Finish(FinishReason.STOP, null, token);
        stopTerminated = true;
      }
    }
    String delta = stopTerminated && !includeStop ? "" : detokenizer.append(token);
    if (!delta.isEmpty()) {
      text.append(delta);
      if (!stops.isEmpty() && outputLength > minTokens) {
        Finish byString = matchStopString(delta.length());
        if (byString != null) tokenFinish = byString;
      }
    }
    finish = tokenFinish;
    return new Update(streamable(), finish);
  }

  /** Ends the choice as aborted; returns whatever was held back. */
  public Update abort() {
    if (finish != null) throw new IllegalStateException("choice already finished: " + finish);
    finish = new Finish(FinishReason.ABORT, null, null);
    return new Update(streamable(), finish);
  }

  /** The choice's text so far (final once finished). */
  public String text() {
    return text.toString();
  }

  public boolean finished() {
    return finish != null;
  }

  /** Why the choice ended, or null while it runs. */
  public Finish finish() {
    return finish;
  }

  public int outputLength() {
    return outputLength;
  }

  /** vLLM's {@code check_stop_strings}, truncating {@link #text} on a match. */
  private Finish matchStopString(int newChars) {
    int len = text.length();
    for (String stop : stops) {
      int from = Math.max(0, len - newChars - stop.length() + 1);
      int at = text.indexOf(stop, from);
      if (at < 0) continue;
      int cut = includeStop ? at + stop.length() : at;
      if (cut < len) text.setLength(cut);
      return new Finish(FinishReason.STOP, stop, null);
    }
    return null;
  }

  private String streamable() {
    int end = text.length();
    if (finish == null && !includeStop) end -= heldBack();
    if (end <= streamed) return "";
    String out = text.substring(streamed, end);
    streamed = end;
    return out;
  }

  /** Length of the longest tail of the text that a stop string starts with (a possible match). */
  private int heldBack() {
    int best = 0;
    int len = text.length();
    for (String stop : stops) {
      for (int n = Math.min(stop.length() - 1, len); n > best; n--) {
        if (endsWith(len, stop, n)) {
          best = n;
          break;
        }
      }
    }
    return best;
  }

  /** Whether the text ends with the first n chars of s. */
  private boolean endsWith(int len, String s, int n) {
    for (int i = 0; i < n; i++) if (text.charAt(len - n + i) != s.charAt(i)) return false;
    return true;
  }

  /**
   * The result of one token.
   *
   * @param delta text that may be sent to the client now (possibly empty)
   * @param finish null while the choice continues
   */
  public record Update(String delta, Finish finish) {
    public Update {
      if (delta == null) throw new IllegalArgumentException("delta is required");
    }

    public boolean finished() {
      return finish != null;
    }
  }

  /**
   * Why a choice ended.
   *
   * @param reason {@code stop}, {@code length} or {@code abort}
   * @param stopString the matched stop string, or null
   * @param stopTokenId the matched stop token id (not plain EOS), or null
   */
  public record Finish(FinishReason reason, String stopString, Integer stopTokenId) {
    public Finish {
      if (reason == null) throw new IllegalArgumentException("reason is required");
      if (stopString != null && stopTokenId != null)
        throw new IllegalArgumentException("one stop reason at most");
    }

    /** OpenAI/vLLM {@code stop_reason}: the string, the token id, or null. */
    public Object stopReason() {
      return stopString != null ? stopString : stopTokenId;
    }
  }
}

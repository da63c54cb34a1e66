package dev.troupe.engine.sampling;

import dev.troupe.engine.Tokenizer;
import dev.troupe.protocol.cluster.SamplingParams;

/**
 * The text side of a choice's stops, as vLLM v1's output processor does it ({@code
 * v1/engine/detokenizer}): detokenizes each generated token, applies stop strings, and decides what
 * part of the text may already be streamed. The token side (max_tokens, EOS, stop token ids) is the
 * engine core's ({@link StopTokens}); its decision comes in with each token.
 *
 * <p>Per generated token:
 *
 * <ul>
 *   <li>a token that ended the choice as a stop token or EOS ({@code stop}) is not detokenized into
 *       the text unless {@code include_stop_str_in_output};
 *   <li>stop strings, once more than {@code min_tokens} outputs exist, are searched where the new
 *       text could complete one, in list order: the first listed string found wins; the text is cut
 *       before it (after it with {@code include_stop_str_in_output}); {@code stop_reason} = the
 *       string. This overrides a {@code length} finish of the same step, as in vLLM. A stop string
 *       that ends a choice the core still runs must be reported to the core, which then finishes it
 *       ({@link Update#finished()} while the token's own finish was null).
 * </ul>
 *
 * <p>Streaming: {@link Update#delta()} never includes text that a later stop string could cut, so
 * streamed text is never retracted. Unlike vLLM, which holds back a fixed {@code max(len(stop)) -
 * 1} characters, only the longest tail that is a proper prefix of some stop string is held back
 * (same concatenated text, earlier chunks). Not thread-safe: one per choice.
 */
public final class StopChecker {

  private final Tokenizer.IncrementalDetokenizer detokenizer;
  private final int minTokens;
  private final boolean includeStop;
  private final java.util.List<String> stops;

  private final StringBuilder text = new StringBuilder();
  private int streamed;
  private int outputLength;
  private Finish finish;

  public StopChecker(SamplingParams params, Tokenizer.IncrementalDetokenizer detokenizer) {
    this.detokenizer = detokenizer;
    this.minTokens = params.minTokens();
    this.includeStop = params.includeStopStrInOutput();
    this.stops = params.stop().stream().filter(s -> !s.isEmpty()).toList();
  }

  /**
   * Records one generated token (every sampled token, in order) and returns the text that may be
   * streamed now plus, when the choice ends with it, why.
   *
   * @param tokenFinish the engine core's decision for this token ({@link StopTokens#check}), or
   *     null when the token does not end the choice by itself
   */
  public Update append(int token, Finish tokenFinish) {
    if (finish != null) throw new IllegalStateException("choice already finished: " + finish);
    outputLength++;
    boolean stopTerminated = tokenFinish != null && tokenFinish.reason() == FinishReason.STOP;
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

  /** Ends the choice without a token (the core gave up on it); returns whatever was held back. */
  public Update end(Finish why) {
    if (finish != null) throw new IllegalStateException("choice already finished: " + finish);
    finish = why;
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

package dev.troupe.engine.output;

import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.engine.toolcall.ToolCallDelta;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One request's output of one engine step, as text: what the worker sends its requester (one
 * message per request per step). Plain data; the worker maps it onto the wire.
 *
 * @param started with the request's first update only (its prompt was prefilled, or it ended before
 *     that), else null
 * @param choices the choices with news, in index order: new text, tokens, logprobs, a finish
 * @param usage on the request's last update only (every choice has finished), else null
 */
public record RequestUpdate(
    String requestId, Started started, List<ChoiceUpdate> choices, Usage usage) {
  public RequestUpdate {
    choices = List.copyOf(choices);
  }

  /** The request's last update: every choice has finished. */
  public boolean finished() {
    return usage != null;
  }

  /**
   * Facts of the prompt, sent once.
   *
   * @param weightVersion the checkpoint step generating the request (0 = base model)
   * @param promptTokens how many tokens the prompt has
   * @param promptTokenIds the prompt's ids when the request asked for them, else null
   * @param promptLogprobs one entry per prompt token (the first null) when asked, else null
   */
  public record Started(
      long weightVersion,
      int promptTokens,
      int[] promptTokenIds,
      List<LogprobsText> promptLogprobs) {
    public Started {
      promptLogprobs =
          promptLogprobs == null
              ? null
              : Collections.unmodifiableList(new ArrayList<>(promptLogprobs));
    }
  }

  /**
   * One choice's news.
   *
   * @param text new final text (may be empty while a stop string is held back)
   * @param tokenIds the tokens generated in this step (a beam's whole output at its end; none when
   *     a choice only finishes)
   * @param logprobs one entry per token when asked, else null
   * @param finishReason null while the choice runs
   * @param stopReason the matched stop string, the stop token id, or null
   * @param reasoning new reasoning text (a reasoning parser split it from {@code text})
   * @param toolCalls new tool-call pieces (header, argument fragments)
   * @param split where the text stands after this step as the reasoning parser reads it
   */
  public record ChoiceUpdate(
      int index,
      String text,
      int[] tokenIds,
      List<LogprobsText> logprobs,
      FinishReason finishReason,
      Object stopReason,
      String reasoning,
      List<ToolCallDelta> toolCalls,
      Split split) {
    public ChoiceUpdate {
      logprobs = logprobs == null ? null : List.copyOf(logprobs);
      reasoning = reasoning == null ? "" : reasoning;
      toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
      if (split == null) split = Split.CONTENT;
    }

    /** A choice's plain text news (no reasoning, no tool calls). */
    public ChoiceUpdate(
        int index,
        String text,
        int[] tokenIds,
        List<LogprobsText> logprobs,
        FinishReason finishReason,
        Object stopReason) {
      this(index, text, tokenIds, logprobs, finishReason, stopReason, "", List.of(), null);
    }
  }

  /**
   * Where a choice's text stands as its reasoning parser reads it: only content so far (or no
   * parser), in its reasoning, or in the content after it. vLLM's response writes an empty part as
   * {@code ""} or null depending on it.
   */
  public enum Split {
    CONTENT,
    REASONING,
    AFTER_REASONING
  }

  /** Logprobs of one position with the tokens' text: the chosen token and the alternatives. */
  public record LogprobsText(TokenText chosen, List<TokenText> top) {
    public LogprobsText {
      top = List.copyOf(top);
    }
  }

  /**
   * One token's logprob.
   *
   * @param token the token's text (or {@code token_id:N} when asked for)
   */
  public record TokenText(int tokenId, String token, float logprob, int rank) {}

  /**
   * Token counts of a finished request.
   *
   * @param promptTokens counted once, whatever n is
   * @param completionTokens summed over all choices, the terminating EOS/stop token included
   * @param cachedPromptTokens prompt tokens served from the prefix cache
   */
  public record Usage(int promptTokens, int completionTokens, int cachedPromptTokens) {}
}

package dev.troupe.engine.output;

import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.core.EngineRequest;
import dev.troupe.engine.core.Rejection;
import dev.troupe.engine.core.StepOutput;
import dev.troupe.engine.core.StepOutput.ChoiceOutput;
import dev.troupe.engine.core.StepOutput.Failure;
import dev.troupe.engine.core.StepOutput.RequestOutput;
import dev.troupe.engine.core.TextParsing;
import dev.troupe.engine.output.RequestUpdate.ChoiceUpdate;
import dev.troupe.engine.output.RequestUpdate.LogprobsText;
import dev.troupe.engine.output.RequestUpdate.Started;
import dev.troupe.engine.output.RequestUpdate.TokenText;
import dev.troupe.engine.output.RequestUpdate.Usage;
import dev.troupe.engine.reasoning.ReasoningParser;
import dev.troupe.engine.sampling.FinishReason;
import dev.troupe.engine.sampling.StepLogprobs;
import dev.troupe.engine.sampling.StopChecker;
import dev.troupe.engine.sampling.TokenLogprob;
import dev.troupe.engine.toolcall.ForcedToolCalls;
import dev.troupe.engine.toolcall.ToolCallDelta;
import dev.troupe.engine.toolcall.ToolCallIds;
import dev.troupe.engine.toolcall.ToolCallParser;
import dev.troupe.protocol.cluster.SamplingParams;
import dev.troupe.protocol.cluster.ToolCalling;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the engine core's outputs into text, right after each step, as vLLM v1's output processor
 * does: incremental detokenization, stop strings (a match ends the choice and is reported back so
 * the core finishes it at once), the text of logprob tokens ({@code token_id:N} when asked), finish
 * reasons and usage. Reasoning and tool-call parsing belong here too (they read the same text).
 *
 * <p>One {@link RequestUpdate} per request with news per step. A request whose text processing
 * throws fails alone: it is reported in {@link Result#failures()}, and the caller removes it from
 * the core.
 *
 * <p>Thread: the engine's (detokenizers and stop checkers are per request, not shared).
 */
public final class OutputProcessor {
  private static final Logger log = LoggerFactory.getLogger(OutputProcessor.class);

  private final Tokenizer tokenizer;
  private final Map<String, RequestText> requests = new HashMap<>();

  public OutputProcessor(Tokenizer tokenizer) {
    this.tokenizer = tokenizer;
  }

  /**
   * What one step gave: the updates, the choices stop strings ended while the core still runs them
   * (finish them there), and the requests that failed (in the core or here: remove them from the
   * core, tell their requesters).
   */
  public record Result(
      List<RequestUpdate> updates, List<StoppedChoice> stopped, List<Failure> failures) {}

  /** A choice a stop string ended. */
  public record StoppedChoice(String requestId, int index) {}

  /**
   * Starts following a request the core just accepted.
   *
   * @throws Rejection when a resumed request's delivered text would already have ended a choice
   */
  public void add(EngineRequest r) {
    requests.put(r.requestId(), new RequestText(r, tokenizer));
  }

  public boolean has(String requestId) {
    return requests.containsKey(requestId);
  }

  /** The text of one core step. */
  public Result process(StepOutput step) {
    List<RequestUpdate> updates = new ArrayList<>(step.outputs().size());
    List<StoppedChoice> stopped = new ArrayList<>();
    List<Failure> failures = new ArrayList<>(step.failures());
    for (Failure f : step.failures()) requests.remove(f.requestId());
    for (RequestOutput o : step.outputs()) {
      RequestText r = requests.get(o.requestId());
      if (r == null) continue;
      try {
        updates.add(update(r, o, stopped));
      } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
        log.warn("request {} failed in the output processor; the others go on", o.requestId(), e);
        requests.remove(o.requestId());
        stopped.removeIf(s -> s.requestId().equals(o.requestId()));
        failures.add(
            new Failure(
                o.requestId(), Rejection.internal("The engine failed on this request: " + e)));
      }
    }
    return new Result(updates, stopped, failures);
  }

  /**
   * The request's last update for an abort: held-back text flushed, every open choice finished with
   * {@code abort}; null if the request is not followed (finished, failed or unknown).
   */
  public RequestUpdate abort(String requestId) {
    RequestText r = requests.remove(requestId);
    if (r == null) return null;
    List<ChoiceUpdate> choices = new ArrayList<>();
    for (int i = 0; i < r.finished.length; i++) {
      if (r.finished[i]) continue;
      r.finished[i] = true;
      String text = r.text[i] == null ? "" : r.text[i].abort().delta();
      choices.add(r.parsed(i, text, true, new int[0], null, FinishReason.ABORT, null));
    }
    return new RequestUpdate(requestId, started(r, null), choices, usage(r));
  }

  private RequestUpdate update(RequestText r, RequestOutput o, List<StoppedChoice> stopped) {
    r.cachedPromptTokens = o.cachedPromptTokens();
    Started started = started(r, o.first() ? o.promptLogprobs() : null);
    List<ChoiceUpdate> choices = new ArrayList<>(o.choices().size());
    for (ChoiceOutput c : o.choices()) {
      int i = c.index();
      r.completionTokens += c.tokenIds().length;
      List<LogprobsText> logprobs = c.logprobs() == null ? null : texts(r, c.logprobs());
      StopChecker.Finish finish;
      String text;
      if (c.whole()) { // a beam: its whole output, decoded at once
        text = tokenizer.decode(textTokens(c), r.skipSpecial, spacesBetween(r));
        finish = c.finish();
      } else if (r.text[i] == null) { // a beam search ended before its results
        text = "";
        finish = c.finish();
      } else {
        StopChecker.Update u =
            c.tokenIds().length == 0
                ? r.text[i].end(c.finish())
                : r.text[i].append(c.tokenIds()[0], c.finish());
        text = u.delta();
        finish = u.finish();
        if (finish != null && c.finish() == null) stopped.add(new StoppedChoice(r.id(), i));
      }
      if (finish != null) r.finished[i] = true;
      choices.add(
          r.parsed(
              i,
              text,
              finish != null,
              c.tokenIds(),
              logprobs,
              finish == null ? null : finish.reason(),
              finish == null ? null : finish.stopReason()));
    }
    boolean done = r.allFinished();
    if (done) requests.remove(r.id());
    return new RequestUpdate(r.id(), started, choices, done ? usage(r) : null);
  }

  /** The prompt facts, the first time only. */
  private Started started(RequestText r, List<StepLogprobs> promptLogprobs) {
    if (r.started) return null;
    r.started = true;
    EngineRequest q = r.request;
    List<LogprobsText> prompt = null;
    if (promptLogprobs != null) {
      prompt = new ArrayList<>(promptLogprobs.size());
      for (StepLogprobs p : promptLogprobs) prompt.add(p == null ? null : text(r, p));
    }
    return new Started(
        q.weightVersion(),
        q.promptTokenIds().length,
        q.returnPromptTokenIds() ? q.promptTokenIds() : null,
        prompt);
  }

  private static Usage usage(RequestText r) {
    return new Usage(r.request.promptTokenIds().length, r.completionTokens, r.cachedPromptTokens);
  }

  /** A beam's tokens to detokenize: a trailing EOS that ended it is not text, as in vLLM. */
  private static int[] textTokens(ChoiceOutput c) {
    int[] t = c.tokenIds();
    StopChecker.Finish f = c.finish();
    boolean eosLast =
        f != null
            && f.reason() == FinishReason.STOP
            && f.stopTokenId() != null
            && t.length > 0
            && t[t.length - 1] == f.stopTokenId();
    return eosLast ? Arrays.copyOf(t, t.length - 1) : t;
  }

  private List<LogprobsText> texts(RequestText r, List<StepLogprobs> entries) {
    List<LogprobsText> out = new ArrayList<>(entries.size());
    for (StepLogprobs e : entries) out.add(text(r, e));
    return out;
  }

  private LogprobsText text(RequestText r, StepLogprobs e) {
    List<TokenText> top = new ArrayList<>(e.top().size());
    for (TokenLogprob t : e.top()) top.add(token(r, t));
    return new LogprobsText(token(r, e.chosen()), top);
  }

  /** A logprob token as text: decoded alone (a padded-vocabulary id is ""), or token_id:N. */
  private TokenText token(RequestText r, TokenLogprob t) {
    String text =
        r.request.logprobTokenIds()
            ? "token_id:" + t.tokenId()
            : tokenizer.decode(new int[] {t.tokenId()}, false, true);
    return new TokenText(t.tokenId(), text, t.logprob(), t.rank());
  }

  private static boolean spacesBetween(RequestText r) {
    return r.request.sampling().spacesBetweenSpecialTokens();
  }

  /**
   * One request's text state: per choice its detokenizer and stop strings (none for beams) and,
   * when the request splits reasoning or parses tool calls, its {@link ChoiceParsing}.
   */
  private static final class RequestText {
    final EngineRequest request;
    final StopChecker[] text;
    final ChoiceParsing[] parsing;
    final boolean[] finished;
    final boolean skipSpecial;
    int completionTokens;
    int cachedPromptTokens;
    boolean started;

    RequestText(EngineRequest request, Tokenizer tokenizer) {
      this.request = request;
      SamplingParams p = request.sampling();
      TextParsing tp = request.parsing();
      ToolCallParser autoParser =
          tp.toolCalling().mode() == ToolCalling.Mode.AUTO
              ? ToolCallParser.named(tp.toolCalling().parser())
              : null;
      // vLLM's adjust_request: a parser whose markers are special tokens sees them in the text
      this.skipSpecial =
          p.skipSpecialTokens() && (autoParser == null || !autoParser.needsSpecialTokens());
      this.text = new StopChecker[p.n()];
      this.parsing = new ChoiceParsing[p.n()];
      this.finished = new boolean[p.n()];
      for (int i = 0; i < text.length; i++) {
        if (!p.useBeamSearch())
          text[i] =
              new StopChecker(
                  p,
                  tokenizer.newDetokenizer(
                      request.promptTokenIds(), skipSpecial, p.spacesBetweenSpecialTokens()));
        if (tp.active()) parsing[i] = parsing(request, tp, autoParser, p.useBeamSearch());
      }
      EngineRequest.Resumed resumed = request.resumed();
      if (resumed != null && !p.useBeamSearch()) replay(resumed);
    }

    /**
     * A migrated request: its delivered tokens go through each open choice's detokenizer and stop
     * strings, and the text is dropped — the client has it — so the state, held-back stop-string
     * prefix included, is where the first replica left it. Usage counts them as if generated here.
     */
    private void replay(EngineRequest.Resumed resumed) {
      for (int i = 0; i < text.length; i++) {
        completionTokens += resumed.tokens()[i].length;
        finished[i] = resumed.finished()[i];
        if (finished[i]) continue;
        for (int token : resumed.tokens()[i]) {
          StopChecker.Update u = text[i].append(token, null);
          // the parser's state follows; its pieces were delivered (or, for a non-streamed
          // extraction, are still held in it)
          if (parsing[i] != null) parsing[i].push(u.delta());
          if (u.finish() != null)
            throw Rejection.internal(
                "The request cannot be resumed on this replica: a stop string ends choice "
                    + i
                    + " within the tokens the first replica delivered.");
        }
      }
    }

    private static ChoiceParsing parsing(
        EngineRequest request, TextParsing tp, ToolCallParser autoParser, boolean whole) {
      ReasoningParser.Session session =
          tp.reasoning() == null
              ? null
              : tp.reasoning().open(request.promptTokenIds(), tp.chatTemplateKwargs());
      ToolCalling calling = tp.toolCalling();
      ToolCallParser tools =
          switch (calling.mode()) {
            case NONE -> null;
            case AUTO -> ToolCallParser.named(calling.parser());
            case REQUIRED -> ForcedToolCalls.required(ToolCallIds::vllm);
            case NAMED -> ForcedToolCalls.named(calling.function(), ToolCallIds::vllm);
          };
      return new ChoiceParsing(session, tools, tp.streamed() && !whole, !calling.parallel());
    }

    /**
     * A choice's news with its text split into reasoning, content and tool calls; a choice that
     * ended with {@code stop} after tool calls (auto that called, or required) ends with {@code
     * tool_calls}, as vLLM's serving layer reports it.
     */
    ChoiceUpdate parsed(
        int i,
        String delta,
        boolean last,
        int[] tokenIds,
        List<LogprobsText> logprobs,
        FinishReason reason,
        Object stopReason) {
      ChoiceParsing cp = parsing[i];
      if (cp == null) return new ChoiceUpdate(i, delta, tokenIds, logprobs, reason, stopReason);
      ChoiceParsing.Piece a = cp.push(delta);
      ChoiceParsing.Piece b = last ? cp.finish() : ChoiceParsing.Piece.EMPTY;
      List<ToolCallDelta> calls = new ArrayList<>(a.toolCalls());
      calls.addAll(b.toolCalls());
      ToolCalling.Mode mode = request.parsing().toolCalling().mode();
      boolean toolFinish =
          reason == FinishReason.STOP
              && (mode == ToolCalling.Mode.REQUIRED
                  || (mode == ToolCalling.Mode.AUTO && cp.toolCalls() > 0));
      return new ChoiceUpdate(
          i,
          a.content() + b.content(),
          tokenIds,
          logprobs,
          toolFinish ? FinishReason.TOOL_CALLS : reason,
          stopReason,
          a.reasoning() + b.reasoning(),
          calls,
          cp.split());
    }

    String id() {
      return request.requestId();
    }

    boolean allFinished() {
      for (boolean f : finished) if (!f) return false;
      return true;
    }
  }
}

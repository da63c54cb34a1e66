package dev.troupe.gateway.completions;

import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.api.chat.Usage;
import dev.troupe.protocol.api.completions.CompletionChunk;
import dev.troupe.protocol.api.completions.CompletionLogprobs;
import dev.troupe.protocol.api.completions.CompletionResponse;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.util.ByteString;

/**
 * A completion's server-sent events in vLLM's format ({@code completion_stream_generator}): per
 * engine step and choice a chunk with the new text (a choice's first chunk with {@code echo}: the
 * prompt, then the step's text), its tokens' logprobs and the finish and stop reasons (no role
 * chunk, no separate finishing chunk); choice {@code i} of prompt {@code p} is index {@code p * n +
 * i}; then the usage chunk when asked and {@code [DONE]}. A step without text or tokens before a
 * choice's first token is skipped. Not thread-safe: fed in order by one stream.
 */
final class CompletionChunkWriter {
  private static final ByteString DONE =
      ByteString.fromString("data: [DONE]\n\n", StandardCharsets.UTF_8);

  private final CompletionPlan plan;
  private final long created;
  private final List<Echo> echoes;
  private final PromptState[] prompts;
  private final boolean[] echoed;
  private final int[] textLength; // code points of generated text (not the echo), as vLLM's offsets
  private final int[] generated;
  private boolean done;

  /** What the stream knows of one prompt. */
  private static final class PromptState {
    List<Integer> ids;
    List<LogprobEntry> logprobs;
    int tokens;
    int cached;
    boolean finished;
  }

  CompletionChunkWriter(CompletionPlan plan, long created, List<Echo> echoes) {
    this.plan = plan;
    this.created = created;
    this.echoes = List.copyOf(echoes);
    int choices = plan.prompts().size() * plan.n();
    this.prompts = new PromptState[plan.prompts().size()];
    for (int p = 0; p < prompts.length; p++) prompts[p] = new PromptState();
    this.echoed = new boolean[choices];
    this.textLength = new int[choices];
    this.generated = new int[choices];
  }

  /** SSE frames for one event of prompt {@code p}'s worker. */
  List<ByteString> onEvent(int p, GenerationEvent e) {
    if (done) return List.of();
    if (e instanceof Failed f) return error(GenerationStream.toApiException(f));
    GenerationUpdate u = (GenerationUpdate) e;
    PromptState prompt = prompts[p];
    if (u.started() != null) {
      prompt.ids = u.started().promptTokenIds();
      prompt.logprobs = u.started().promptLogprobs();
      prompt.tokens = u.started().promptTokens();
    }
    List<ByteString> out = new ArrayList<>();
    for (ChoiceUpdate c : u.choices()) onChoice(p, prompt, c, out);
    if (u.done()) {
      prompt.finished = true;
      prompt.tokens = u.usage().promptTokens();
      prompt.cached = u.usage().cachedPromptTokens();
      boolean all = true;
      for (PromptState s : prompts) all &= s.finished;
      if (all) finish(out);
    }
    return out;
  }

  private void onChoice(int p, PromptState prompt, ChoiceUpdate c, List<ByteString> out) {
    int i = p * plan.n() + c.index();
    Echo echo = echoes.get(p);
    String text = c.text();
    List<Integer> ids = c.tokenIds();
    List<LogprobEntry> logprobs = c.logprobs() == null ? List.of() : c.logprobs();
    List<Integer> promptIds = null;
    if (plan.echo() && !echoed[i]) {
      boolean only = plan.echoOnly();
      text = only ? echo.promptText() : echo.promptText() + text;
      ids = CompletionResponses.joined(prompt.ids, only ? List.of() : ids);
      logprobs = CompletionResponses.joined(prompt.logprobs, only ? List.of() : logprobs);
      promptIds = prompt.ids;
      echoed[i] = true;
    } else {
      if (!echoed[i]) {
        promptIds = prompt.ids;
        echoed[i] = true;
      }
      // nothing yet (a step that only started the choice): no empty chunk
      if (text.isEmpty() && ids.isEmpty() && generated[i] == 0) return;
    }
    CompletionLogprobs lp =
        plan.logprobs() == null
            ? null
            : LegacyLogprobs.of(ids, logprobs, plan.logprobs(), textLength[i], echo.firstToken());
    textLength[i] += c.text().codePointCount(0, c.text().length());
    generated[i] += c.tokenIds().size();
    CompletionChunk.Choice choice =
        new CompletionChunk.Choice(
            i,
            text,
            lp,
            c.finished() ? c.finishReason().wireName() : null,
            c.stopReason(),
            plan.returnTokenIds() ? promptIds : null,
            plan.returnTokenIds() ? c.tokenIds() : null);
    Usage usage = plan.continuousUsage() ? Usage.of(prompt.tokens, generated[i], 0) : null;
    out.add(
        frame(
            new CompletionChunk(
                plan.responseId(),
                CompletionResponse.OBJECT,
                created,
                plan.model(),
                List.of(choice),
                usage)));
  }

  private void finish(List<ByteString> out) {
    if (plan.includeUsage()) {
      int promptTokens = 0;
      int cached = 0;
      int completion = 0;
      for (PromptState s : prompts) {
        promptTokens += s.tokens;
        cached += s.cached;
      }
      for (int g : generated) completion += g;
      out.add(
          frame(
              new CompletionChunk.UsageChunk(
                  plan.responseId(),
                  CompletionResponse.OBJECT,
                  created,
                  plan.model(),
                  List.of(),
                  Usage.of(promptTokens, completion, cached))));
    }
    out.add(DONE);
    done = true;
  }

  /** The error event and {@code [DONE]} for a failure after the stream opened. */
  List<ByteString> error(ApiException e) {
    if (done) return List.of();
    done = true;
    return List.of(frame(e.body()), DONE);
  }

  boolean isDone() {
    return done;
  }

  /** The whole answer as one event, then {@code [DONE]} (a stream vLLM does not stream). */
  static List<ByteString> single(CompletionResponse response) {
    return List.of(frame(response), DONE);
  }

  private static ByteString frame(Object value) {
    return ByteString.fromString("data: ", StandardCharsets.UTF_8)
        .concat(ByteString.fromArray(JsonBodies.bytes(value)))
        .concat(ByteString.fromString("\n\n", StandardCharsets.UTF_8));
  }
}

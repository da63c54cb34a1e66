package dev.troupe.gateway.chat;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.protocol.api.chat.ChatCompletionChunk;
import dev.troupe.protocol.api.chat.ChatCompletionChunk.ChunkChoice;
import dev.troupe.protocol.api.chat.ChatCompletionChunk.Delta;
import dev.troupe.protocol.api.chat.ChatCompletionChunk.DeltaFunction;
import dev.troupe.protocol.api.chat.ChatCompletionChunk.DeltaToolCall;
import dev.troupe.protocol.api.chat.Usage;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TextSplit;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ToolCallPiece;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.util.ByteString;

/**
 * Turns a generation's updates into server-sent events in vLLM's chunk format (its stream
 * generator): per choice a first chunk with the role, an echo chunk when asked, then per update one
 * chunk per choice with news (new text, tokens, or its finish: {@code finish_reason} lands on the
 * chunk with the choice's last text, or on an empty delta if that step produced none), then the
 * usage chunk ({@code choices: []}) when usage is on, and {@code data: [DONE]}. A failure after the
 * stream opened becomes a {@code data: {"error":…}} event before {@code [DONE]}.
 *
 * <p>Each update is one engine step's news for the request, so chunks are written as updates come:
 * no grouping window, nothing held back. Not thread-safe: one per request.
 */
public final class ChatChunkWriter {
  public static final ByteString DONE =
      ByteString.fromString("data: [DONE]\n\n", StandardCharsets.UTF_8);

  private final ChatPlan plan;
  private final long created;
  private final Map<Integer, Integer> completionTokens = new HashMap<>();
  private final java.util.Set<Integer> choicesWithCalls = new java.util.HashSet<>();
  private int promptTokens;
  private boolean done;

  public ChatChunkWriter(ChatPlan plan, long createdEpochSeconds) {
    this.plan = plan;
    this.created = createdEpochSeconds;
  }

  /** SSE frames for one event of the worker. */
  public List<ByteString> onEvent(GenerationEvent e) {
    List<ByteString> out = new ArrayList<>();
    if (done) return out;
    if (e instanceof Failed f) return error(GenerationStream.toApiException(f));
    GenerationUpdate u = (GenerationUpdate) e;
    if (u.started() != null) onStarted(u.started(), out);
    for (ChoiceUpdate c : u.choices()) onChoice(c, out);
    if (u.done()) onDone(u.usage(), out);
    return out;
  }

  /** The error event and {@code [DONE]} for a failure after the stream opened. */
  public List<ByteString> error(ApiException e) {
    List<ByteString> out = new ArrayList<>();
    if (done) return out;
    out.add(frame(e.body()));
    out.add(DONE);
    done = true;
    return out;
  }

  public boolean isDone() {
    return done;
  }

  private void onStarted(Started s, List<ByteString> out) {
    promptTokens = s.promptTokens();
    int n = plan.generation().sampling().n();
    for (int i = 0; i < n; i++) {
      completionTokens.put(i, 0);
      out.add(
          frame(
              chunk(
                  new ChunkChoice(i, Delta.role(plan.responseRole()), null, null, null, null),
                  plan.returnTokenIds() ? s.promptTokenIds() : null)));
    }
    if (plan.echoText() != null)
      for (int i = 0; i < n; i++)
        out.add(
            frame(
                chunk(
                    new ChunkChoice(i, Delta.content(plan.echoText()), null, null, null, null),
                    null)));
  }

  private void onChoice(ChoiceUpdate c, List<ByteString> out) {
    if (plan.parsed()) {
      onParsedChoice(c, out);
      return;
    }
    boolean news = !c.text().isEmpty() || !c.tokenIds().isEmpty();
    if (!news && !c.finished()) return; // nothing new (vLLM skips these)
    completionTokens.merge(c.index(), c.tokenIds().size(), Integer::sum);
    out.add(
        frame(
            chunk(
                new ChunkChoice(
                    c.index(),
                    news ? Delta.content(c.text()) : Delta.empty(),
                    news && plan.logprobs() && c.logprobs() != null
                        ? ChatResponseFolder.logprobs(c.logprobs(), plan.topLogprobs())
                        : null,
                    c.finished() ? c.finishReason().wireName() : null,
                    c.stopReason(),
                    news && plan.returnTokenIds() ? c.tokenIds() : null),
                null)));
  }

  /**
   * A choice whose text a parser split (vLLM's parser paths): the delta holds only what is new
   * ({@code content}, {@code reasoning}/{@code reasoning_content}, {@code tool_calls}); a step with
   * none of it is skipped unless it finishes the choice or carries logprobs or token ids that would
   * otherwise be lost.
   */
  private void onParsedChoice(ChoiceUpdate c, List<ByteString> out) {
    String reasoning = plan.includeReasoning() && !c.reasoning().isEmpty() ? c.reasoning() : null;
    String content = c.text().isEmpty() ? null : c.text();
    List<DeltaToolCall> calls = c.toolCalls().isEmpty() ? null : deltaCalls(c.toolCalls());
    if (calls != null) choicesWithCalls.add(c.index());
    boolean text = reasoning != null || content != null || calls != null;
    boolean tokens = !c.tokenIds().isEmpty() && (plan.logprobs() || plan.returnTokenIds());
    if (!text && !tokens && !c.finished()) return;
    if (!text && c.finished() && !c.tokenIds().isEmpty() && emptyAsText(c)) {
      // vLLM's parsers turn a last step without text (EOS, a stop string at the very start) into
      // an empty delta of the part the choice is in
      if (c.split() == TextSplit.REASONING) reasoning = "";
      else content = "";
    }
    completionTokens.merge(c.index(), c.tokenIds().size(), Integer::sum);
    out.add(
        frame(
            chunk(
                new ChunkChoice(
                    c.index(),
                    new Delta(null, content, reasoning, reasoning, calls),
                    plan.logprobs() && c.logprobs() != null && !c.tokenIds().isEmpty()
                        ? ChatResponseFolder.logprobs(c.logprobs(), plan.topLogprobs())
                        : null,
                    c.finished() ? c.finishReason().wireName() : null,
                    c.stopReason(),
                    plan.returnTokenIds() && !c.tokenIds().isEmpty() ? c.tokenIds() : null),
                null)));
  }

  /**
   * Whether a last step without text is sent as an empty part: not for forced tool calls or an auto
   * choice that made calls (vLLM's tool-call paths send {@code delta: {}}), nor a reasoning part
   * the client asked to leave out.
   */
  private boolean emptyAsText(ChoiceUpdate c) {
    if (c.split() == TextSplit.REASONING && !plan.includeReasoning()) return false;
    return switch (plan.toolMode()) {
      case REQUIRED, NAMED -> false;
      case AUTO -> !choicesWithCalls.contains(c.index());
      case NONE -> true;
    };
  }

  private static List<DeltaToolCall> deltaCalls(List<ToolCallPiece> pieces) {
    List<DeltaToolCall> out = new ArrayList<>(pieces.size());
    for (ToolCallPiece p : pieces)
      out.add(
          new DeltaToolCall(
              p.index(),
              p.id(),
              p.id() == null ? null : "function",
              new DeltaFunction(p.name(), p.arguments())));
    return out;
  }

  private void onDone(
      dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage u, List<ByteString> out) {
    if (plan.includeUsage())
      out.add(
          frame(
              new ChatCompletionChunk(
                  plan.responseId(),
                  ChatCompletionChunk.OBJECT,
                  created,
                  plan.model(),
                  List.of(),
                  Usage.of(u.promptTokens(), u.completionTokens(), u.cachedPromptTokens()),
                  null,
                  plan.systemFingerprint())));
    out.add(DONE);
    done = true;
  }

  private ChatCompletionChunk chunk(ChunkChoice choice, List<Integer> promptTokenIds) {
    Usage usage = null;
    if (plan.continuousUsage()) {
      int completion = completionTokens.getOrDefault(choice.index(), 0);
      usage = Usage.of(promptTokens, completion, 0);
    }
    return new ChatCompletionChunk(
        plan.responseId(),
        ChatCompletionChunk.OBJECT,
        created,
        plan.model(),
        List.of(choice),
        usage,
        promptTokenIds,
        plan.systemFingerprint());
  }

  /** One SSE event: {@code data: <json>\n\n}. */
  static ByteString frame(Object value) {
    byte[] json = JsonBodies.bytes(value);
    return ByteString.fromString("data: ", StandardCharsets.UTF_8)
        .concat(ByteString.fromArray(json))
        .concat(ByteString.fromString("\n\n", StandardCharsets.UTF_8));
  }
}

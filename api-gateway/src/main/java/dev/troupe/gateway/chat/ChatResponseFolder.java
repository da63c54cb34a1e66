package dev.troupe.gateway.chat;

import dev.troupe.protocol.api.chat.ChatCompletionResponse;
import dev.troupe.protocol.api.chat.ChatCompletionResponse.Choice;
import dev.troupe.protocol.api.chat.ChatCompletionResponse.PromptLogprob;
import dev.troupe.protocol.api.chat.ChatMessage;
import dev.troupe.protocol.api.chat.ChoiceLogprobs;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ChoiceUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Started;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TextSplit;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenLogprob;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.ToolCallPiece;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Usage;
import dev.troupe.protocol.cluster.ToolCalling;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Folds a generation's updates into the non-streaming response (vLLM's full generator): the same
 * updates the stream writes, accumulated. Not thread-safe: one instance per request, fed in order.
 */
public final class ChatResponseFolder {
  private final ChatPlan plan;
  private final long created;
  private final Map<Integer, ChoiceState> choices = new TreeMap<>();
  private Started started;
  private Usage usage;
  private dev.troupe.protocol.cluster.KvHandle kvHandle;

  public ChatResponseFolder(ChatPlan plan, long createdEpochSeconds) {
    this.plan = plan;
    this.created = createdEpochSeconds;
    for (int i = 0; i < plan.generation().sampling().n(); i++) choices.put(i, new ChoiceState());
  }

  /** Accumulates one event; a {@link Failed} becomes the API error. */
  public ChatResponseFolder add(GenerationEvent event) {
    if (event instanceof Failed f) throw GenerationStream.toApiException(f);
    GenerationUpdate u = (GenerationUpdate) event;
    if (u.started() != null) started = u.started();
    for (ChoiceUpdate c : u.choices()) {
      ChoiceState st = choices.computeIfAbsent(c.index(), i -> new ChoiceState());
      st.text.append(c.text());
      st.reasoning.append(c.reasoning());
      for (ToolCallPiece p : c.toolCalls()) {
        String[] call = st.calls.computeIfAbsent(p.index(), k -> new String[] {null, null, ""});
        if (p.id() != null) call[0] = p.id();
        if (p.name() != null) call[1] = p.name();
        if (p.arguments() != null) call[2] += p.arguments();
      }
      st.split = c.split();
      st.tokenIds.addAll(c.tokenIds());
      if (c.logprobs() != null) st.logprobs.addAll(c.logprobs());
      if (c.finished()) {
        st.finishReason = c.finishReason().wireName();
        st.stopReason = c.stopReason();
      }
    }
    if (u.done()) {
      usage = u.usage();
      kvHandle = u.kvHandle();
    }
    return this;
  }

  /** The response; the stream must have reached its last update. */
  public ChatCompletionResponse response() {
    if (usage == null)
      throw GenerationStream.toApiException(
          new IllegalStateException("generation ended without its last update"));
    List<Choice> out = new ArrayList<>();
    for (Map.Entry<Integer, ChoiceState> e : choices.entrySet()) {
      ChoiceState st = e.getValue();
      String content = (plan.echoText() == null ? "" : plan.echoText()) + st.text;
      out.add(
          new Choice(
              e.getKey(),
              message(st, content),
              plan.logprobs() ? logprobs(st.logprobs, plan.topLogprobs()) : null,
              st.finishReason,
              st.stopReason,
              plan.returnTokenIds() ? List.copyOf(st.tokenIds) : null));
    }
    return new ChatCompletionResponse(
        plan.responseId(),
        ChatCompletionResponse.OBJECT,
        created,
        plan.model(),
        out,
        null,
        plan.systemFingerprint(),
        dev.troupe.protocol.api.chat.Usage.of(
            usage.promptTokens(), usage.completionTokens(), usage.cachedPromptTokens()),
        plan.promptLogprobs() && started != null ? promptLogprobs(started.promptLogprobs()) : null,
        plan.returnTokenIds() && started != null ? started.promptTokenIds() : null,
        kvHandle == null ? null : kvHandle.toParams());
  }

  /**
   * The message: without a parser, the text as content ({@code ""} when empty, as vLLM); with one
   * (vLLM's parser paths), an empty content is {@code ""} unless the parser reports it absent: null
   * when the output reasoned (cut in its reasoning, or nothing after {@code </think>}) or an auto
   * tool-call parser found calls and no text around them; forced tool calls ({@code required}, a
   * named function) always write {@code ""}. Reasoning in {@code reasoning} and {@code
   * reasoning_content} ({@code ""} when the output reasoned but wrote none) unless {@code
   * include_reasoning} is false; the tool calls in order.
   */
  private ChatMessage message(ChoiceState st, String content) {
    if (!plan.parsed()) return ChatMessage.of(plan.responseRole(), content, null);
    boolean forced =
        plan.toolMode() == ToolCalling.Mode.REQUIRED || plan.toolMode() == ToolCalling.Mode.NAMED;
    boolean absent =
        st.split.reasoned() || (plan.toolMode() == ToolCalling.Mode.AUTO && !st.calls.isEmpty());
    String c = content.isEmpty() && !forced && absent ? null : content;
    boolean reasoned = st.reasoning.length() > 0 || st.split.reasoned();
    String reasoning = plan.includeReasoning() && reasoned ? st.reasoning.toString() : null;
    List<Map<String, Object>> calls = new ArrayList<>();
    for (String[] call : st.calls.values()) {
      Map<String, Object> function = new LinkedHashMap<>();
      function.put("name", call[1]);
      function.put("arguments", call[2]);
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("id", call[0]);
      m.put("type", "function");
      m.put("function", function);
      calls.add(m);
    }
    return new ChatMessage(
        plan.responseRole(), c, null, null, null, null, calls, reasoning, reasoning);
  }

  private static final class ChoiceState {
    final StringBuilder text = new StringBuilder();
    final StringBuilder reasoning = new StringBuilder();
    final Map<Integer, String[]> calls = new TreeMap<>(); // index -> {id, name, arguments}
    final List<Integer> tokenIds = new ArrayList<>();
    final List<LogprobEntry> logprobs = new ArrayList<>();
    TextSplit split = TextSplit.CONTENT;
    String finishReason;
    Object stopReason;
  }

  // ------------------------------------------------------------------ shared formatting

  /**
   * vLLM's chat logprobs: per token the chosen one, then alternatives sampled-first, {@code k} of
   * them.
   */
  static ChoiceLogprobs logprobs(List<LogprobEntry> entries, int k) {
    List<ChoiceLogprobs.TokenLogprob> content = new ArrayList<>(entries.size());
    for (LogprobEntry e : entries) {
      List<ChoiceLogprobs.TopLogprob> top = new ArrayList<>();
      if (k > 0) {
        top.add(top(e.chosen()));
        for (TokenLogprob t : e.top()) {
          if (top.size() >= k) break;
          if (t.tokenId() != e.chosen().tokenId()) top.add(top(t));
        }
      }
      TokenLogprob c = e.chosen();
      content.add(
          new ChoiceLogprobs.TokenLogprob(c.token(), floor(c.logprob()), bytes(c.token()), top));
    }
    return new ChoiceLogprobs(content);
  }

  private static ChoiceLogprobs.TopLogprob top(TokenLogprob t) {
    return new ChoiceLogprobs.TopLogprob(t.token(), floor(t.logprob()), bytes(t.token()));
  }

  /**
   * Top-level {@code prompt_logprobs}: null first entry, then {token id: {logprob, rank,
   * decoded_token}}.
   */
  public static List<Map<String, PromptLogprob>> promptLogprobs(List<LogprobEntry> entries) {
    if (entries == null) return null;
    List<Map<String, PromptLogprob>> out = new ArrayList<>(entries.size());
    for (LogprobEntry e : entries) {
      if (e == null) {
        out.add(null);
        continue;
      }
      Map<String, PromptLogprob> m = new LinkedHashMap<>();
      TokenLogprob c = e.chosen();
      m.put(
          Integer.toString(c.tokenId()),
          new PromptLogprob(floor(c.logprob()), c.rank(), c.token()));
      for (TokenLogprob t : e.top())
        m.putIfAbsent(
            Integer.toString(t.tokenId()),
            new PromptLogprob(floor(t.logprob()), t.rank(), t.token()));
      out.add(m);
    }
    return out;
  }

  static List<Integer> bytes(String token) {
    byte[] b = (token == null ? "" : token).getBytes(StandardCharsets.UTF_8);
    List<Integer> out = new ArrayList<>(b.length);
    for (byte x : b) out.add(x & 0xff);
    return out;
  }

  /** vLLM never writes -inf: logprobs are floored at -9999. */
  public static double floor(double logprob) {
    return Double.isNaN(logprob) ? -9999.0 : Math.max(-9999.0, logprob);
  }
}

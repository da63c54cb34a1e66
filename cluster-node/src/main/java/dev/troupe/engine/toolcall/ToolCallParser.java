package dev.troupe.engine.toolcall;

import java.util.List;
import java.util.function.Supplier;

/**
 * Parses tool calls out of generated text, as vLLM's {@code --tool-call-parser} does for {@code
 * tool_choice: "auto"}: {@code hermes} ({@code <tool_call>{json}</tool_call>}, Qwen2/Qwen3), {@code
 * llama3_json} (a JSON object, or several separated by {@code ;}, Llama 3.x) and {@code mistral}
 * ({@code [TOOL_CALLS]} then a JSON array, or {@code name[ARGS]{json}}). Pure and
 * streaming-capable: {@link #extract} for a whole output, {@link #open} for a per-choice stream of
 * OpenAI tool-call deltas. Arguments are always the JSON string Python's {@code json.dumps(args,
 * ensure_ascii=False)} gives (vLLM's), in both modes.
 */
public interface ToolCallParser {

  /** The {@code --tool-call-parser} name. */
  String name();

  /** Whether the text must keep special tokens (Mistral's {@code [TOOL_CALLS]} is one). */
  default boolean needsSpecialTokens() {
    return false;
  }

  /** Tool calls of a whole output; if any call is malformed, none, and the text is content. */
  Extraction extract(String output);

  /** A streaming session for one choice. */
  Session open();

  /**
   * A whole output's result.
   *
   * @param content the text that is not tool calls, null when there is none
   * @param calls the calls, in order (empty when none)
   */
  record Extraction(String content, List<ToolCall> calls) {
    public Extraction {
      calls = List.copyOf(calls);
    }

    public boolean called() {
      return !calls.isEmpty();
    }
  }

  /** One choice's stream: text in, content and tool-call deltas out. Not thread-safe. */
  interface Session {
    Step push(String text);

    /** The end of the output: releases held-back text. */
    Step finish();
  }

  /** What one piece of text yields: content to send, and tool-call deltas. */
  record Step(String content, List<ToolCallDelta> deltas) {
    public static final Step EMPTY = new Step("", List.of());

    public Step {
      content = content == null ? "" : content;
      deltas = List.copyOf(deltas);
    }

    public boolean isEmpty() {
      return content.isEmpty() && deltas.isEmpty();
    }
  }

  /**
   * The parser registered under {@code name}.
   *
   * @param ids makes tool-call ids (vLLM's {@code chatcmpl-tool-<hex>}; Mistral uses its own)
   * @throws IllegalArgumentException for an unknown name
   */
  static ToolCallParser named(String name, Supplier<String> ids) {
    return switch (name) {
      case "hermes" -> new HermesToolParser(ids);
      case "llama3_json" -> new Llama3JsonToolParser(ids);
      case "mistral" -> new MistralToolParser(ids);
      default ->
          throw new IllegalArgumentException(
              "unknown tool call parser '" + name + "' (known: hermes, llama3_json, mistral)");
    };
  }

  /** The parser with its production id scheme. */
  static ToolCallParser named(String name) {
    return named(name, name.equals("mistral") ? ToolCallIds::mistral : ToolCallIds::vllm);
  }
}

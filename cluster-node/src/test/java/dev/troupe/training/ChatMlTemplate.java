package dev.troupe.training;

import dev.troupe.engine.ChatTemplate;
import java.util.List;
import java.util.Map;

/** A minimal ChatML renderer (Qwen-style turns) standing in for the Jinja engine in tests. */
final class ChatMlTemplate implements ChatTemplate {
  @Override
  public String render(Input input) {
    StringBuilder sb = new StringBuilder();
    if (input.tools() != null)
      sb.append("<|im_start|>system\ntools: ").append(input.tools().size()).append("<|im_end|>\n");
    List<Map<String, Object>> ms = input.messages();
    for (int i = 0; i < ms.size(); i++) {
      Map<String, Object> m = ms.get(i);
      sb.append("<|im_start|>").append(m.get("role")).append('\n').append(m.get("content"));
      boolean open = input.continueFinalMessage() && i == ms.size() - 1;
      if (!open) sb.append("<|im_end|>\n");
    }
    if (input.addGenerationPrompt()) sb.append("<|im_start|>assistant\n");
    return sb.toString();
  }
}

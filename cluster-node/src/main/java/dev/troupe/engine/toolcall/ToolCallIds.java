package dev.troupe.engine.toolcall;

import java.security.SecureRandom;
import java.util.UUID;

/** Tool-call ids as vLLM makes them. */
public final class ToolCallIds {

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final String ALPHANUMERIC =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

  private ToolCallIds() {}

  /** {@code chatcmpl-tool-} and 32 hex digits (vLLM's {@code make_tool_call_id}). */
  public static String vllm() {
    return "chatcmpl-tool-" + UUID.randomUUID().toString().replace("-", "");
  }

  /** Nine alphanumeric characters (Mistral's tool-call ids). */
  public static String mistral() {
    StringBuilder sb = new StringBuilder(9);
    for (int i = 0; i < 9; i++)
      sb.append(ALPHANUMERIC.charAt(RANDOM.nextInt(ALPHANUMERIC.length())));
    return sb.toString();
  }
}

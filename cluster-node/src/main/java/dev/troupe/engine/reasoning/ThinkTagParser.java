package dev.troupe.engine.reasoning;

import dev.troupe.engine.Tokenizer;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;

/**
 * {@code <think>…</think>} reasoning, for {@code qwen3} and {@code deepseek_r1} (see {@link
 * ReasoningParser} for how the start is decided). The text machine strips the tags: reasoning is
 * the text between them, content the text after {@code </think>}; a {@code <think>} at the very
 * start of a reasoning output is dropped; text that could be the beginning of a tag is held back
 * until it is not.
 */
final class ThinkTagParser implements ReasoningParser {

  static final String START = "<think>";
  static final String END = "</think>";

  private final String name;
  private final int startId;
  private final int endId;
  private final Set<Integer> specialIds;
  private final boolean reasoningByDefault;

  private ThinkTagParser(
      String name, int startId, int endId, Set<Integer> specialIds, boolean reasoningByDefault) {
    this.name = name;
    this.startId = startId;
    this.endId = endId;
    this.specialIds = specialIds;
    this.reasoningByDefault = reasoningByDefault;
  }

  static ThinkTagParser create(String name, Tokenizer tokenizer, boolean reasoningByDefault) {
    OptionalInt start = tokenizer.tokenToId(START);
    OptionalInt end = tokenizer.tokenToId(END);
    if (start.isEmpty() || end.isEmpty())
      throw new IllegalArgumentException(
          "reasoning parser '" + name + "' needs <think> and </think> tokens in the vocabulary");
    return new ThinkTagParser(
        name, start.getAsInt(), end.getAsInt(), tokenizer.specialTokenIds(), reasoningByDefault);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Session open(int[] promptIds, Map<String, Object> chatTemplateKwargs) {
    Phase initial = null;
    for (int i = promptIds.length - 1; i >= 0 && initial == null; i--) {
      int id = promptIds[i];
      if (id == startId) initial = Phase.REASONING;
      else if (id == endId) initial = Phase.CONTENT;
      else if (specialIds.contains(id)) break;
    }
    Object thinking = chatTemplateKwargs == null ? null : chatTemplateKwargs.get("enable_thinking");
    if (Boolean.FALSE.equals(thinking)) initial = Phase.CONTENT;
    if (initial == null) initial = reasoningByDefault ? Phase.REASONING : Phase.UNDECIDED;
    return new ThinkSession(initial);
  }

  private final class ThinkSession implements Session {
    private Phase tokenPhase;
    private Phase textPhase;
    private boolean leadingTagPossible; // a reasoning output may still begin with "<think>"
    private boolean sawReasoning;
    private final StringBuilder held = new StringBuilder();

    ThinkSession(Phase initial) {
      this.tokenPhase = initial;
      this.textPhase = initial;
      this.leadingTagPossible = initial == Phase.REASONING;
      this.sawReasoning = initial == Phase.REASONING;
    }

    @Override
    public Phase phase() {
      return tokenPhase;
    }

    @Override
    public int startTokenId() {
      return startId;
    }

    @Override
    public int endTokenId() {
      return endId;
    }

    @Override
    public void onToken(int tokenId) {
      if (tokenPhase == Phase.UNDECIDED)
        tokenPhase = tokenId == startId ? Phase.REASONING : Phase.CONTENT;
      else if (tokenPhase == Phase.REASONING && tokenId == endId) tokenPhase = Phase.CONTENT;
    }

    @Override
    public boolean sawReasoning() {
      return sawReasoning;
    }

    @Override
    public Phase textPhase() {
      return textPhase;
    }

    @Override
    public Delta onText(String text) {
      held.append(text);
      StringBuilder reasoning = new StringBuilder();
      StringBuilder content = new StringBuilder();
      while (held.length() > 0) {
        if (textPhase == Phase.CONTENT) {
          content.append(held);
          held.setLength(0);
        } else if (textPhase == Phase.UNDECIDED || leadingTagPossible) {
          if (startsWith(held, START)) {
            held.delete(0, START.length());
            textPhase = Phase.REASONING;
            sawReasoning = true;
            leadingTagPossible = false;
          } else if (START.startsWith(held.toString())) {
            break; // could still become "<think>"
          } else {
            if (textPhase == Phase.UNDECIDED) textPhase = Phase.CONTENT;
            leadingTagPossible = false;
          }
        } else {
          int at = held.indexOf(END);
          if (at >= 0) {
            reasoning.append(held, 0, at);
            held.delete(0, at + END.length());
            textPhase = Phase.CONTENT;
          } else {
            int keep = partialSuffix(held, END);
            reasoning.append(held, 0, held.length() - keep);
            held.delete(0, held.length() - keep);
            break;
          }
        }
      }
      return new Delta(reasoning.toString(), content.toString());
    }

    @Override
    public Delta finish() {
      String rest = held.toString();
      held.setLength(0);
      if (textPhase == Phase.REASONING) return new Delta(rest, "");
      return new Delta("", rest);
    }
  }

  private static boolean startsWith(StringBuilder sb, String prefix) {
    if (sb.length() < prefix.length()) return false;
    for (int i = 0; i < prefix.length(); i++) if (sb.charAt(i) != prefix.charAt(i)) return false;
    return true;
  }

  /** Length of the longest proper suffix of {@code sb} that is a prefix of {@code tag}. */
  private static int partialSuffix(StringBuilder sb, String tag) {
    for (int n = Math.min(tag.length() - 1, sb.length()); n > 0; n--) {
      boolean match = true;
      for (int i = 0; i < n && match; i++)
        if (sb.charAt(sb.length() - n + i) != tag.charAt(i)) match = false;
      if (match) return n;
    }
    return 0;
  }
}

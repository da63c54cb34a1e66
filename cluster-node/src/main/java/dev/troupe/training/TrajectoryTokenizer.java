package dev.troupe.training;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.Tokenizer;
import dev.troupe.protocol.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * Renders a trajectory with the model's chat template and marks the sampled assistant tokens as
 * trainable, as ART's {@code preprocessing/tokenize.py} does (reference §3):
 *
 * <ol>
 *   <li>each of the main history and {@code additional_histories} is rendered on its own, with its
 *       own tools;
 *   <li>a Choice (an entry with {@code finish_reason} / {@code message}) with logprobs is
 *       trainable; plain messages and Choices without logprobs are context; the history is cut
 *       after the last trainable Choice, and a history without one yields nothing;
 *   <li>the conversation is rendered with {@code continue_final_message} and every trainable
 *       assistant body replaced by a sentinel token; each sentinel is then replaced by the Choice's
 *       sampled token ids ({@code token_id:N}, else the vocabulary entry, else {@code token_ids})
 *       with their logprobs — so the whole rendered assistant body is exactly what was sampled.
 *       When the ids cannot be recovered the content text is tokenized and the logprobs are
 *       unknown;
 *   <li>ART's two fix-ups: a sampled leading {@code <think>} overwrites the template's empty think
 *       block; a sampled final token equal to the template's next token (e.g. {@code <|im_end|>})
 *       is not repeated.
 * </ol>
 */
public final class TrajectoryTokenizer {
  private static final ObjectMapper MAPPER = Json.mapper();
  private final Tokenizer tokenizer;
  private final ChatTemplate template;

  public TrajectoryTokenizer(Tokenizer tokenizer, ChatTemplate template) {
    if (template == null) throw new IllegalArgumentException("the model has no chat template");
    this.tokenizer = tokenizer;
    this.template = template;
  }

  /** The trajectory's histories that have something to train; possibly none. */
  public List<TokenizedHistory> tokenize(JsonNode trajectory) {
    List<TokenizedHistory> out = new ArrayList<>();
    tokenizeHistory(trajectory.path("messages_and_choices"), trajectory.path("tools"), out);
    for (JsonNode history : trajectory.path("additional_histories"))
      tokenizeHistory(history.path("messages_and_choices"), history.path("tools"), out);
    return out;
  }

  /**
   * A Choice is told from a message structurally: it has {@code message} or {@code finish_reason}.
   */
  static boolean isChoice(JsonNode entry) {
    return entry.has("finish_reason") || (entry.has("message") && !entry.has("role"));
  }

  private static boolean hasLogprobs(JsonNode choice) {
    JsonNode content = choice.path("logprobs").path("content");
    return content.isArray() && content.size() > 0;
  }

  private void tokenizeHistory(JsonNode entries, JsonNode tools, List<TokenizedHistory> out) {
    if (!entries.isArray()) return;
    int last = -1;
    for (int i = 0; i < entries.size(); i++)
      if (isChoice(entries.get(i)) && hasLogprobs(entries.get(i))) last = i;
    if (last < 0) return;

    // render with each trainable body replaced by a sentinel that the template leaves alone
    List<JsonNode> trainable = new ArrayList<>();
    int[] ids = null;
    int sentinelId = -1;
    for (String sentinel : sentinelCandidates(entries)) {
      trainable.clear();
      List<Map<String, Object>> messages = messages(entries, last, sentinel, trainable);
      @SuppressWarnings("unchecked")
      List<Map<String, Object>> toolList =
          tools.isArray() && tools.size() > 0 ? MAPPER.convertValue(tools, List.class) : null;
      String rendered =
          template.render(new ChatTemplate.Input(messages, toolList, null, false, true, Map.of()));
      int[] candidate = tokenizer.encode(rendered, false);
      int id = tokenizer.tokenToId(sentinel).orElseThrow();
      int count = 0;
      for (int c : candidate) if (c == id) count++;
      if (count == trainable.size()) {
        ids = candidate;
        sentinelId = id;
        break;
      }
    }
    if (ids == null)
      throw new IllegalStateException("no sentinel token survives this chat template");

    List<Integer> tokens = new ArrayList<>(ids.length + 256);
    List<Boolean> mask = new ArrayList<>(ids.length + 256);
    List<Double> lps = new ArrayList<>(ids.length + 256);
    int next = 0; // next trainable choice
    OptionalInt thinkId = tokenizer.tokenToId("<think>");
    for (int p = 0; p < ids.length; p++) {
      if (ids[p] != sentinelId || next >= trainable.size()) {
        tokens.add(ids[p]);
        mask.add(false);
        lps.add(Double.NaN);
        continue;
      }
      Sampled s = sampled(trainable.get(next++));
      // the model sampled its own <think>: drop the template's empty think block before it
      if (s.ids.length > 0 && thinkId.isPresent() && s.ids[0] == thinkId.getAsInt()) {
        int back = tokens.size() - 4;
        if (back >= 0 && tokens.get(back) == thinkId.getAsInt())
          for (int k = tokens.size() - 1; k >= back; k--) {
            tokens.remove(k);
            mask.remove(k);
            lps.remove(k);
          }
      }
      for (int k = 0; k < s.ids.length; k++) {
        tokens.add(s.ids[k]);
        mask.add(true);
        lps.add(s.logprobs[k]);
      }
      // the sampled end-of-turn token replaces the template's
      if (s.ids.length > 0 && p + 1 < ids.length && ids[p + 1] == s.ids[s.ids.length - 1]) p++;
    }
    int n = tokens.size();
    int[] t = new int[n];
    boolean[] m = new boolean[n];
    double[] l = new double[n];
    for (int i = 0; i < n; i++) {
      t[i] = tokens.get(i);
      m[i] = mask.get(i);
      l[i] = lps.get(i);
    }
    TokenizedHistory h = new TokenizedHistory(t, m, l);
    if (h.numTrainable() > 0) out.add(h);
  }

  private static List<Map<String, Object>> messages(
      JsonNode entries, int last, String sentinel, List<JsonNode> trainable) {
    List<Map<String, Object>> messages = new ArrayList<>();
    for (int i = 0; i <= last; i++) {
      JsonNode entry = entries.get(i);
      if (isChoice(entry)) {
        JsonNode msg = entry.path("message");
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", "assistant");
        boolean train = hasLogprobs(entry);
        // a trained body is replaced whole by the sampled tokens, tool calls included
        m.put("content", train ? sentinel : text(msg.path("content")));
        if (!train && msg.path("tool_calls").isArray() && msg.path("tool_calls").size() > 0)
          m.put("tool_calls", MAPPER.convertValue(msg.path("tool_calls"), List.class));
        messages.add(m);
        if (train) trainable.add(entry);
      } else {
        @SuppressWarnings("unchecked")
        Map<String, Object> m = MAPPER.convertValue(entry, LinkedHashMap.class);
        if (m.get("content") == null) m.put("content", "");
        messages.add(m);
      }
    }
    return messages;
  }

  private record Sampled(int[] ids, double[] logprobs) {}

  /** The Choice's sampled ids and logprobs, or its content tokenized with unknown logprobs. */
  private Sampled sampled(JsonNode choice) {
    JsonNode content = choice.path("logprobs").path("content");
    int n = content.size();
    int[] ids = new int[n];
    double[] lps = new double[n];
    boolean resolved = true;
    for (int k = 0; k < n; k++) {
      JsonNode entry = content.get(k);
      lps[k] = entry.path("logprob").isNumber() ? entry.path("logprob").asDouble() : Double.NaN;
      String token = entry.path("token").asText("");
      if (token.startsWith("token_id:")) {
        try {
          ids[k] = Integer.parseInt(token.substring("token_id:".length()));
          continue;
        } catch (NumberFormatException e) {
          resolved = false;
          break;
        }
      }
      OptionalInt id = tokenizer.tokenToId(token);
      if (id.isEmpty()) {
        resolved = false;
        break;
      }
      ids[k] = id.getAsInt();
    }
    if (resolved) return new Sampled(ids, lps);
    JsonNode tokenIds = choice.path("token_ids");
    if (tokenIds.isArray() && tokenIds.size() > 0) {
      int[] t = new int[tokenIds.size()];
      for (int k = 0; k < t.length; k++) t[k] = tokenIds.get(k).asInt();
      double[] l = new double[t.length];
      if (t.length == n) l = lps;
      else Arrays.fill(l, Double.NaN);
      return new Sampled(t, l);
    }
    int[] t = tokenizer.encode(text(choice.path("message").path("content")), false);
    double[] l = new double[t.length];
    Arrays.fill(l, Double.NaN);
    return new Sampled(t, l);
  }

  private static String text(JsonNode content) {
    return content.isTextual()
        ? content.asText()
        : content.isNull() || content.isMissingNode() ? "" : content.toString();
  }

  /**
   * Special tokens that occur nowhere in the conversation, highest id first (ART picks an unused
   * vocab id); the caller keeps the first one the template renders exactly once per trained body.
   */
  private List<String> sentinelCandidates(JsonNode entries) {
    String all = entries.toString();
    List<Integer> ids = new ArrayList<>(tokenizer.specialTokenIds());
    ids.sort((a, b) -> Integer.compare(b, a));
    List<String> out = new ArrayList<>();
    for (int id : ids) {
      String tok = tokenizer.idToToken(id);
      if (tok != null && !all.contains(tok)) out.add(tok);
      if (out.size() == 8) break;
    }
    return out;
  }
}

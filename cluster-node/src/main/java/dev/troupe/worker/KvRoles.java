package dev.troupe.worker;

import com.typesafe.config.Config;
import dev.troupe.protocol.cluster.KvRole;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * {@code troupe.worker.kv-role}: what this node's replicas of each model do in disaggregated
 * prefill/decode ({@code --kv-role}). A replica reports its role with its cache reports and its
 * status; the gateways route by it. The role belongs to the node, so a replica that sharding moves
 * to another node takes that node's role.
 *
 * @param defaultRole the role of a model not named in {@code byModel}
 * @param byModel role per served model name
 */
public record KvRoles(KvRole defaultRole, Map<String, KvRole> byModel) {

  /** Every model does both phases. */
  public static final KvRoles BOTH = new KvRoles(KvRole.BOTH, Map.of());

  public KvRoles {
    if (defaultRole == null) throw new IllegalArgumentException("defaultRole is required");
    byModel = Map.copyOf(byModel);
  }

  /** The role of {@code model}'s replicas on this node. */
  public KvRole of(String model) {
    return byModel.getOrDefault(model, defaultRole);
  }

  /**
   * Reads {@code troupe.worker.kv-role} ({@code default}, and {@code models}: a list of {@code
   * {model, role}}); BOTH when absent.
   *
   * @throws IllegalArgumentException naming a bad role or a model given twice
   */
  public static KvRoles fromConfig(Config config) {
    String path = "troupe.worker.kv-role";
    if (!config.hasPath(path)) return BOTH;
    Config c = config.getConfig(path);
    KvRole fallback = c.hasPath("default") ? role(c.getString("default"), path) : KvRole.BOTH;
    Map<String, KvRole> roles = new LinkedHashMap<>();
    if (c.hasPath("models"))
      for (Config m : c.getConfigList("models")) {
        String model = m.getString("model");
        if (roles.put(model, role(m.getString("role"), path + ".models")) != null)
          throw new IllegalArgumentException(path + ".models names model " + model + " twice");
      }
    return new KvRoles(fallback, roles);
  }

  private static KvRole role(String name, String where) {
    try {
      return KvRole.parse(name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + ": " + e.getMessage(), e);
    }
  }
}

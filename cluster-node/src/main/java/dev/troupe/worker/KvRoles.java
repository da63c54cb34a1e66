package dev.troupe.worker;

import com.typesafe.config.Config;
import dev.troupe.protocol.cluster.KvRole;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code troupe.worker.kv-role}: what this node's replicas of each model do in disaggregated
 * prefill/decode ({@code --kv-role}). A replica reports its role with its cache reports and its
 * status; the gateways route by it. The role belongs to the node, so a replica that sharding moves
 * to another node takes that node's role; the node also advertises its roles as cluster roles
 * ({@link #memberRoles}), by which sharding places replicas ({@link KvRolePlacement}).
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

  /** How a node advertises its roles to the cluster: a Pekko cluster role per declared role. */
  static final String MEMBER_ROLE_PREFIX = "kv-role:";

  private static final String ALL_MODELS = "*";

  /**
   * These roles as Pekko cluster roles ({@code kv-role:<model>=<role>}, {@code kv-role:*=<role>}
   * for the default; nothing for {@code both}), so that the shard coordinator can place replicas by
   * role ({@link KvRolePlacement}).
   */
  public List<String> memberRoles() {
    List<String> out = new ArrayList<>();
    if (defaultRole != KvRole.BOTH)
      out.add(MEMBER_ROLE_PREFIX + ALL_MODELS + "=" + defaultRole.wireName());
    byModel.forEach(
        (model, role) -> {
          if (role != defaultRole) out.add(MEMBER_ROLE_PREFIX + model + "=" + role.wireName());
        });
    Collections.sort(out);
    return out;
  }

  /** A member's roles, read back from its cluster roles ({@link #memberRoles}); others ignored. */
  public static KvRoles fromMemberRoles(Set<String> clusterRoles) {
    KvRole fallback = KvRole.BOTH;
    Map<String, KvRole> roles = new LinkedHashMap<>();
    for (String r : clusterRoles) {
      int eq = r.lastIndexOf('=');
      if (!r.startsWith(MEMBER_ROLE_PREFIX) || eq < 0) continue;
      String model = r.substring(MEMBER_ROLE_PREFIX.length(), eq);
      KvRole role;
      try {
        role = KvRole.parse(r.substring(eq + 1));
      } catch (IllegalArgumentException e) {
        continue; // a newer node's role this one does not know: placed as both
      }
      if (model.equals(ALL_MODELS)) fallback = role;
      else roles.put(model, role);
    }
    return new KvRoles(fallback, roles);
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

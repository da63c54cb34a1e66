package dev.troupe.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.protocol.cluster.KvRole;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A node's prefill/decode roles as cluster roles, and back (what replica placement reads). */
class KvRolesTest {

  @Test
  void memberRolesNameEveryDeclaredRoleAndReadBack() {
    KvRoles roles =
        new KvRoles(KvRole.DECODE, Map.of("demo", KvRole.PREFILL, "other", KvRole.DECODE));
    List<String> member = roles.memberRoles();
    assertEquals(List.of("kv-role:*=decode", "kv-role:demo=prefill"), member);
    Set<String> all = new HashSet<>(member);
    all.addAll(List.of("worker", "dc-default", "kv-role:broken", "kv-role:x=unknown-role"));
    KvRoles back = KvRoles.fromMemberRoles(all);
    assertEquals(KvRole.PREFILL, back.of("demo"));
    assertEquals(KvRole.DECODE, back.of("other"));
    assertEquals(KvRole.DECODE, back.of("anything"));
    assertEquals(KvRole.DECODE, back.of("x"), "a role this node does not know is ignored");
  }

  @Test
  void aNodeThatDeclaresNothingAdvertisesNothing() {
    assertEquals(List.of(), KvRoles.BOTH.memberRoles());
    assertEquals(KvRole.BOTH, KvRoles.fromMemberRoles(Set.of("worker")).of("demo"));
  }
}

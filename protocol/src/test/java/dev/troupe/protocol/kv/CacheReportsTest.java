package dev.troupe.protocol.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.protocol.kv.CacheReports.CacheReport;
import dev.troupe.protocol.kv.CacheReports.ReplicaLoad;
import dev.troupe.protocol.kv.CacheReports.SnapshotRequest;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.serialization.jackson.JacksonCborSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class CacheReportsTest {
  private static ActorTestKit testKit;

  @BeforeAll
  static void start() {
    testKit = ActorTestKit.create();
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  private static Object roundTrip(Object message) {
    Serialization serialization = SerializationExtension.get(testKit.system().classicSystem());
    var serializer = serialization.findSerializerFor(message);
    assertEquals(JacksonCborSerializer.class, serializer.getClass(), "bound to jackson-cbor");
    byte[] bytes = serialization.serialize(message).get();
    String manifest = Serializers.manifestFor(serializer, message);
    return serialization.deserialize(bytes, serializer.identifier(), manifest).get();
  }

  @Test
  void reportsRoundTripThroughCbor() {
    List<BlockHash> stored = List.of(new BlockHash(-1L, 2L), new BlockHash(Long.MIN_VALUE, 0));
    CacheReport report =
        new CacheReport(
            "m#1",
            "inc-1",
            7,
            false,
            16,
            CacheReports.pack(stored),
            CacheReports.pack(List.of(new BlockHash(3, 4))),
            new ReplicaLoad(2, 3, 400, 10, 100, List.of("a:step2")));
    CacheReport back = (CacheReport) roundTrip(report);
    assertEquals(stored, back.storedHashes());
    assertEquals(List.of(new BlockHash(3, 4)), back.removedHashes());
    assertEquals(report.load(), back.load());
    assertEquals(7, back.seq());
    assertArrayEquals(report.stored(), back.stored());
    assertNull(((SnapshotRequest) roundTrip(new SnapshotRequest(null))).replica());
    assertEquals("m#0", ((SnapshotRequest) roundTrip(new SnapshotRequest("m#0"))).replica());
  }

  @Test
  void malformedReportsAreRefused() {
    ReplicaLoad load = new ReplicaLoad(0, 0, 0, 0, 1, null);
    assertThrows(
        IllegalArgumentException.class,
        () -> new CacheReport("m#0", "i", 0, false, 16, null, null, load));
    assertThrows(
        IllegalArgumentException.class,
        () -> new CacheReport("m#0", "i", 1, false, 16, new long[] {1}, null, load));
    assertEquals(0, new CacheReport("m#0", "i", 1, true, 16, null, null, load).stored().length);
  }
}

package dev.troupe.engine.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

class VectorSupportTest {
  @Test
  void warnsBelowTheKernelsTrapLimitOnly() {
    String advice = VectorSupport.trapLimitAdvice("100"); // HotSpot's default
    assertNotNull(advice);
    assertTrue(advice.contains("-XX:PerMethodTrapLimit=100:"), advice);
    assertTrue(advice.contains("-XX:PerMethodTrapLimit=" + VectorSupport.TRAP_LIMIT), advice);
    assertNotNull(VectorSupport.trapLimitAdvice(String.valueOf(VectorSupport.TRAP_LIMIT - 1)));
    assertNull(VectorSupport.trapLimitAdvice(String.valueOf(VectorSupport.TRAP_LIMIT)));
    assertNull(VectorSupport.trapLimitAdvice("100000"));
    assertNull(VectorSupport.trapLimitAdvice(null)); // not HotSpot: nothing to say
    assertNull(VectorSupport.trapLimitAdvice("many"));
  }

  /** The build's test JVMs run the kernels as ./troupe does (pom.xml's troupe.test.argLine). */
  @Test
  void testJvmsRunWithTheLaunchersTrapLimit() {
    String value =
        ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
            .getVMOption("PerMethodTrapLimit")
            .getValue();
    assertEquals(String.valueOf(VectorSupport.TRAP_LIMIT), value);
  }
}

package dev.sluice.spring;

import dev.sluice.spring.app.TestApp;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.boot.test.context.SpringBootTest;

/** {@code sluice.dry-run=true} on WebFlux: decided and counted, never refused. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=reactive", "sluice.store.type=memory",
        "sluice.dry-run=true", "spring.autoconfigure.exclude="
        + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class DryRunWebFluxTest extends DryRunTest {
  @BeforeAll
  static void blockHound() {
    BlockHoundForTests.install();
  }
}

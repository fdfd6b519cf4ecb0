package dev.sluice.spring;

import dev.sluice.spring.app.TestApp;
import org.springframework.boot.test.context.SpringBootTest;

/** Concurrency limits from YAML on Spring MVC (Tomcat), the in-memory store. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=servlet",
        "sluice.store.type=memory",
        "spring.autoconfigure.exclude="
            + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "sluice.concurrency.limits.backend.limit=2",
        "sluice.concurrency.limits.backend.shares.sheddable=0.5",
        "sluice.concurrency.rules[0].path=/slow/**",
        "sluice.concurrency.rules[0].limit=backend",
        "sluice.concurrency.rules[0].per=global",
        "sluice.concurrency.rules[0].priority-header=X-Priority",
        "sluice.concurrency.limits.per-client.limit=1",
        "sluice.concurrency.rules[1].path=/open",
        "sluice.concurrency.rules[1].limit=per-client",
        "sluice.concurrency.rules[1].per=client",
        "sluice.concurrency.rules[1].key=header:X-Client",
        "sluice.concurrency.limits.tenants.limit=1",
        "sluice.concurrency.limits.tenants.fair.queues=1024",
        "sluice.concurrency.limits.tenants.fair.hand-size=4",
        "sluice.concurrency.rules[2].path=/fair/**",
        "sluice.concurrency.rules[2].limit=tenants",
        "sluice.concurrency.rules[2].flow=header:X-Tenant",
        "sluice.concurrency.rules[2].max-wait=10s"})
class ConcurrencyMvcTest extends ConcurrencyContract {}

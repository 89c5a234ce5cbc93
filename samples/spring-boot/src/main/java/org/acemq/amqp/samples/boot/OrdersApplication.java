package org.acemq.amqp.samples.boot;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.event.ContextClosedEvent;

/**
 * The Spring Boot sample: starts, runs {@link OrdersDemo}, keeps serving {@code /actuator/health} and
 * {@code /actuator/prometheus} for {@code demo.stay-up} (30 s by default; negative: until stopped), then shuts down
 * gracefully and exits with 0 on PASS, 1 on FAIL. See {@code docs/spring-boot.md}.
 */
@SpringBootApplication
@EnableConfigurationProperties(DemoProperties.class)
public class OrdersApplication {

    /**
     * @param args Spring Boot arguments, e.g. {@code --demo.orders=5000 --demo.stay-up=-1 --server.port=8080}
     * @throws InterruptedException if interrupted while staying up
     */
    public static void main(String[] args) throws InterruptedException {
        System.exit(run(args));
    }

    /**
     * Runs the sample without exiting the JVM.
     *
     * @param args the arguments
     * @return the exit status: 0 PASS, 1 FAIL
     * @throws InterruptedException if interrupted while staying up
     */
    static int run(String... args) throws InterruptedException {
        ConfigurableApplicationContext context = SpringApplication.run(OrdersApplication.class, args);
        CountDownLatch closed = new CountDownLatch(1);
        context.addApplicationListener(e -> {
            if (e instanceof ContextClosedEvent) {
                closed.countDown();
            }
        });
        OrdersDemo.Verdict verdict = context.getBean(OrdersDemo.class).verdict().join();
        Duration stayUp = context.getBean(DemoProperties.class).stayUp();
        if (stayUp.isNegative()) {
            System.out.println(" serving health and metrics until stopped (Ctrl-C)");
            closed.await();
        } else if (!stayUp.isZero()) {
            System.out.println(" serving health and metrics for " + stayUp.toSeconds() + " s (--demo.stay-up=-1: "
                    + "until stopped, 0: exit at once)");
            closed.await(stayUp.toMillis(), TimeUnit.MILLISECONDS);
        }
        context.close();
        return verdict.pass() ? 0 : 1;
    }
}

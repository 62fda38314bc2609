package com.example.analytics;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.time.YearMonth;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/** Builds the monthly sales summary e-mailed to regional managers. */
public final class SalesReport {

    /** A single completed sale. */
    public record Sale(
            String orderId, String region, String product, String customerId, LocalDate date, int units,
            BigDecimal unitPrice) {

        public Sale {
            Objects.requireNonNull(orderId, "orderId");
            Objects.requireNonNull(region, "region");
            Objects.requireNonNull(product, "product");
            Objects.requireNonNull(date, "date");
            if (units <= 0) {
                throw new IllegalArgumentException("units must be positive: " + units);
            }
        }

        public BigDecimal revenue() {
            return unitPrice.multiply(BigDecimal.valueOf(units));
        }
    }

    /** Revenue and volume of one product. */
    public record ProductTotal(String product, BigDecimal revenue, int units) {}

    /** Everything the report template needs for one region and month. */
    public record RegionSummary(
            String region,
            YearMonth month,
            BigDecimal revenue,
            int orders,
            int customers,
            BigDecimal averageOrderValue,
            List<ProductTotal> topProducts,
            Map<LocalDate, BigDecimal> dailyRevenue) {}

    private final int topProductCount;

    public SalesReport(int topProductCount) {
        if (topProductCount <= 0) {
            throw new IllegalArgumentException("topProductCount must be positive");
        }
        this.topProductCount = topProductCount;
    }

    public List<RegionSummary> summarize(List<Sale> sales, YearMonth month) {
        Map<String, List<Sale>> byRegion = new HashMap<>();
        for (Sale sale : sales) {
            if (!YearMonth.from(sale.date()).equals(month)) {
                continue;
            }
            List<Sale> bucket = byRegion.get(sale.region());
            if (bucket == null) {
                bucket = new ArrayList<>();
                byRegion.put(sale.region(), bucket);
            }
            bucket.add(sale);
        }

        List<RegionSummary> result = new ArrayList<>();
        for (Map.Entry<String, List<Sale>> entry : byRegion.entrySet()) {
            List<Sale> regionSales = entry.getValue();

            BigDecimal revenue = BigDecimal.ZERO;
            Set<String> orders = new HashSet<>();
            Set<String> customers = new HashSet<>();
            Map<LocalDate, BigDecimal> daily = new TreeMap<>();
            Map<String, BigDecimal> productRevenue = new HashMap<>();
            Map<String, Integer> productUnits = new HashMap<>();
            for (Sale sale : regionSales) {
                revenue = revenue.add(sale.revenue());
                orders.add(sale.orderId());
                if (sale.customerId() != null) {
                    customers.add(sale.customerId());
                }
                daily.merge(sale.date(), sale.revenue(), BigDecimal::add);
                productRevenue.merge(sale.product(), sale.revenue(), BigDecimal::add);
                productUnits.merge(sale.product(), sale.units(), Integer::sum);
            }

            List<ProductTotal> products = new ArrayList<>();
            for (Map.Entry<String, BigDecimal> p : productRevenue.entrySet()) {
                products.add(new ProductTotal(p.getKey(), p.getValue(), productUnits.get(p.getKey())));
            }
            Collections.sort(products, new Comparator<ProductTotal>() {
                @Override
                public int compare(ProductTotal a, ProductTotal b) {
                    int byRevenue = b.revenue().compareTo(a.revenue());
                    return byRevenue != 0 ? byRevenue : a.product().compareTo(b.product());
                }
            });
            List<ProductTotal> top = new ArrayList<>();
            for (int i = 0; i < products.size() && i < topProductCount; i++) {
                top.add(products.get(i));
            }

            BigDecimal average = orders.isEmpty()
                    ? BigDecimal.ZERO
                    : revenue.divide(BigDecimal.valueOf(orders.size()), 2, RoundingMode.HALF_UP);
            result.add(new RegionSummary(
                    entry.getKey(), month, revenue, orders.size(), customers.size(), average, top, daily));
        }
        Collections.sort(result, new Comparator<RegionSummary>() {
            @Override
            public int compare(RegionSummary a, RegionSummary b) {
                return a.region().compareTo(b.region());
            }
        });
        return result;
    }

    /** Renders the summaries as the plain-text body of the e-mail. */
    public static String render(List<RegionSummary> summaries) {
        StringBuilder sb = new StringBuilder();
        for (RegionSummary s : summaries) {
            sb.append(String.format("%s — %s%n", s.region(), s.month()));
            sb.append(String.format("  revenue: %s over %d orders (%d customers, avg %s)%n",
                    s.revenue(), s.orders(), s.customers(), s.averageOrderValue()));
            for (ProductTotal p : s.topProducts()) {
                sb.append(String.format("    %-24s %10s %6d units%n", p.product(), p.revenue(), p.units()));
            }
        }
        return sb.toString();
    }

    /** Regions ranked by revenue, highest first, for the summary table at the top of the e-mail. */
    public static Map<String, BigDecimal> ranking(List<RegionSummary> summaries) {
        return summaries.stream()
                .sorted(Comparator.comparing(RegionSummary::revenue).reversed())
                .collect(Collectors.toMap(
                        RegionSummary::region, RegionSummary::revenue, (a, b) -> a, LinkedHashMap::new));
    }
}

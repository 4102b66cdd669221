package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The shop: the stdio MCP server the workload's tools come from. Its data is fixed, so the right answer is known.

// category is the category the task asks about; it holds itemCount items.
const (
	category  = "garden"
	itemCount = 10
)

// findInput, findOutput: find_items, which lists a category's item ids.
type findInput struct {
	Category string `json:"category" jsonschema:"the category to list, e.g. garden"`
}

type findOutput struct {
	ItemIDs []string `json:"item_ids" jsonschema:"the ids of the category's items"`
}

// detailsInput, itemDetails: item_details, one item's catalogue entry; its sku is what stock_level takes.
type detailsInput struct {
	ItemID string `json:"item_id" jsonschema:"an item id from find_items"`
}

type itemDetails struct {
	ItemID      string   `json:"item_id"`
	Name        string   `json:"name"`
	SKU         string   `json:"sku" jsonschema:"the stock-keeping unit, which stock_level takes"`
	Category    string   `json:"category"`
	Description string   `json:"description"`
	Dimensions  string   `json:"dimensions"`
	WeightGrams int      `json:"weight_grams"`
	Supplier    string   `json:"supplier"`
	Tags        []string `json:"tags"`
}

// stockInput, stockLevel: stock_level, a sku's stock in the warehouse.
type stockInput struct {
	SKU string `json:"sku" jsonschema:"a sku from item_details"`
}

type stockLevel struct {
	SKU            string `json:"sku"`
	Warehouse      string `json:"warehouse"`
	InStock        int    `json:"in_stock" jsonschema:"units on the shelf, reserved ones excluded"`
	Reserved       int    `json:"reserved"`
	UnitPriceCents int    `json:"unit_price_cents"`
	NextRestock    string `json:"next_restock"`
}

var itemNames = [itemCount]string{"Hose reel", "Pruning shears", "Rake", "Watering can", "Trowel", "Wheelbarrow",
	"Garden gloves", "Seed tray", "Leaf blower", "Compost bin"}

// itemID, sku and the functions below give the shop's data; inStock is 0 for every fourth item.
func itemID(i int) string { return fmt.Sprintf("itm-%04d", 101+i*7) }
func sku(i int) string    { return fmt.Sprintf("GRD-%03d-%c", 40+i*3, 'A'+i) }
func inStock(i int) int {
	if i%4 == 3 {
		return 0
	}
	return 5 + (i*37)%23
}

func details(i int) itemDetails {
	name := itemNames[i]
	return itemDetails{
		ItemID: itemID(i), Name: name, SKU: sku(i), Category: category,
		Description: fmt.Sprintf("%s for home gardens and allotments. Made of powder-coated steel and recycled "+
			"polypropylene, weather-proof and UV-stable; fits the standard wall mounts of the range. Care: rinse after "+
			"use and store dry over winter. Two-year warranty against manufacturing defects; spare parts are sold "+
			"separately under the same sku family.", name),
		Dimensions:  fmt.Sprintf("%d x %d x %d cm", 20+i*5, 15+i*2, 8+i),
		WeightGrams: 350 + i*120,
		Supplier:    "Greenfield Tools Ltd, Unit 4, Riverside Estate",
		Tags:        []string{"garden", "outdoor", strings.ToLower(strings.Fields(name)[0])},
	}
}

func stock(i int) stockLevel {
	return stockLevel{SKU: sku(i), Warehouse: "north-2", InStock: inStock(i), Reserved: i % 3,
		UnitPriceCents: 499 + i*250, NextRestock: fmt.Sprintf("2026-07-%02d", 1+i*2)}
}

// totalInStock is the right answer: the units in stock of the category's items.
func totalInStock() int {
	n := 0
	for i := range itemCount {
		n += inStock(i)
	}
	return n
}

// newShop returns the shop's MCP server: find_items, item_details and stock_level, each with input and output
// schemas (from the types above) and structured results.
func newShop() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	index := func(key string, f func(int) string) (int, bool) {
		for i := range itemCount {
			if f(i) == key {
				return i, true
			}
		}
		return 0, false
	}
	mcp.AddTool(s, &mcp.Tool{Name: "find_items", Description: "List the ids of the items of a category."},
		func(_ context.Context, _ *mcp.CallToolRequest, in findInput) (*mcp.CallToolResult, findOutput, error) {
			out := findOutput{ItemIDs: []string{}}
			if in.Category == category {
				for i := range itemCount {
					out.ItemIDs = append(out.ItemIDs, itemID(i))
				}
			}
			return nil, out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "item_details", Description: "Get an item's catalogue entry: name, sku, description, dimensions, supplier."},
		func(_ context.Context, _ *mcp.CallToolRequest, in detailsInput) (*mcp.CallToolResult, itemDetails, error) {
			i, ok := index(in.ItemID, itemID)
			if !ok {
				return nil, itemDetails{}, fmt.Errorf("no item %q", in.ItemID)
			}
			return nil, details(i), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stock_level", Description: "Get a sku's stock in the warehouse: units in stock, reserved, price, next restock."},
		func(_ context.Context, _ *mcp.CallToolRequest, in stockInput) (*mcp.CallToolResult, stockLevel, error) {
			i, ok := index(in.SKU, sku)
			if !ok {
				return nil, stockLevel{}, fmt.Errorf("no sku %q", in.SKU)
			}
			return nil, stock(i), nil
		})
	return s
}

// serve is the subcommand `codeload serve`: the shop on stdin and stdout, until stdin closes.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("codeload serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	err := newShop().Run(ctx, &mcp.StdioTransport{})
	if errors.Is(err, io.EOF) {
		return nil // stdin closed: a normal end
	}
	return err
}

// gopeer: a tiny command-line peer built on the Apache RocketMQ Go client (rocketmq-client-go/v2), used by
// tests/interop/go.rs. Every subcommand takes the name server list explicitly (-n "a;b"); nothing is looked up
// over HTTP. Output lines are meant for the test to parse:
//
//	gopeer topics  -n NS                          -> "TOPIC <name>" per topic, then "OK"
//	gopeer route   -n NS -t TOPIC                 -> "QUEUE <broker> <queueId>" per writable queue, then "OK"
//	gopeer produce -n NS -t TOPIC -count N -prefix P -> "SENT <i> <msgId>" per message, "RETRY ..." per retry,
//	                                              "RETRIES <early> <late>", then "OK"
//	gopeer consume -n NS -t TOPIC -g GROUP -count N -prefix P -timeout 60s
//	                                              -> "RECV <body>" per distinct body with that prefix, then "OK"
//
// Every subcommand also takes -ak ACCESS_KEY -sk SECRET_KEY: the client is then built with
// primitive.Credentials{AccessKey, SecretKey}, so that it signs its requests (the client's own ACL interceptor adds
// the AccessKey and Signature ext fields). Producers and push consumers sign what they send to the name server;
// the admin client of v2.1.2 signs nothing it sends to the name server (it never hands its credentials to its
// name-server client), so tests/interop/acl.rs uses produce/consume. produce -attempts N (default 21) bounds how
// often one message is tried; -attempts 1 shows a refusal at once.
//
// Retries (produce). A failed send is tried again 500 ms later. A retry can hide an intermittent wrong route, so
// none is silent: each one prints "RETRY <i> <attempt> <early|late> <reason>", and produce ends (also when it
// fails) with "RETRIES <early> <late>". early = retries before this process's first successful send (legitimate
// only while a route appears, e.g. right after a name server was killed or restarted); late = retries after a send
// had worked, i.e. a route that worked and then failed: never legitimate. The test that runs the program judges
// the counts (tests/support/proc.rs, RetryBudget; the rule is in docs/interop.md, "Retries"). The client's own
// resend (producer.WithRetry) is 0, so that every failed attempt passes through this count.
//
// Exit status 0 means the subcommand fully succeeded; anything else prints "FAIL <reason>" and exits 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func fail(format string, args ...interface{}) {
	fmt.Printf("FAIL "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: gopeer topics|route|produce|consume [flags]")
	}
	rlog.SetLogLevel("warn")
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	ns := fs.String("n", "", "name servers, separated by ';'")
	topic := fs.String("t", "", "topic")
	group := fs.String("g", "gopeer_group", "consumer or producer group")
	count := fs.Int("count", 10, "number of messages")
	prefix := fs.String("prefix", "go-msg", "message body prefix")
	timeout := fs.Duration("timeout", 60*time.Second, "overall timeout")
	accessKey := fs.String("ak", "", "ACL access key (with -sk: sign every request)")
	secretKey := fs.String("sk", "", "ACL secret key")
	attempts := fs.Int("attempts", 21, "produce: how often one message is tried before giving up")
	_ = fs.Parse(os.Args[2:])
	if *ns == "" {
		fail("-n is required")
	}
	addrs := strings.Split(*ns, ";")
	resolver := primitive.NewPassthroughResolver(addrs)
	creds := primitive.Credentials{AccessKey: *accessKey, SecretKey: *secretKey}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	switch os.Args[1] {
	case "topics":
		a, err := admin.NewAdmin(admin.WithResolver(resolver), admin.WithCredentials(creds))
		if err != nil {
			fail("admin: %v", err)
		}
		defer a.Close()
		list, err := a.FetchAllTopicList(ctx)
		if err != nil {
			fail("FetchAllTopicList: %v", err)
		}
		sort.Strings(list.TopicList)
		for _, t := range list.TopicList {
			fmt.Printf("TOPIC %s\n", t)
		}
	case "route":
		a, err := admin.NewAdmin(admin.WithResolver(resolver), admin.WithCredentials(creds))
		if err != nil {
			fail("admin: %v", err)
		}
		defer a.Close()
		mqs, err := a.FetchPublishMessageQueues(ctx, *topic)
		if err != nil {
			fail("FetchPublishMessageQueues: %v", err)
		}
		for _, mq := range mqs {
			fmt.Printf("QUEUE %s %d\n", mq.BrokerName, mq.QueueId)
		}
	case "produce":
		p, err := rocketmq.NewProducer(
			producer.WithNsResolver(resolver),
			producer.WithGroupName(*group),
			producer.WithRetry(0),
			producer.WithSendMsgTimeout(10*time.Second),
			producer.WithCredentials(creds),
		)
		if err != nil {
			fail("producer: %v", err)
		}
		if err := p.Start(); err != nil {
			fail("producer start: %v", err)
		}
		defer p.Shutdown()
		early, late, sentOne := 0, 0, false
		for i := 0; i < *count; i++ {
			msg := primitive.NewMessage(*topic, []byte(fmt.Sprintf("%s-%d", *prefix, i)))
			var res *primitive.SendResult
			for attempt := 1; ; attempt++ {
				res, err = p.SendSync(ctx, msg)
				if err == nil && res.Status == primitive.SendOK {
					break
				}
				if attempt >= *attempts || ctx.Err() != nil {
					fmt.Printf("RETRIES %d %d\n", early, late)
					fail("send %d: %v %v", i, err, res)
				}
				phase := "early"
				if sentOne {
					phase = "late"
					late++
				} else {
					early++
				}
				why := fmt.Sprint(err)
				if err == nil {
					why = fmt.Sprintf("status %v", res.Status)
				}
				fmt.Printf("RETRY %d %d %s %s\n", i, attempt, phase, strings.ReplaceAll(why, "\n", " "))
				time.Sleep(500 * time.Millisecond)
			}
			sentOne = true
			fmt.Printf("SENT %d %s\n", i, res.MsgID)
		}
		fmt.Printf("RETRIES %d %d\n", early, late)
	case "consume":
		var mu sync.Mutex
		seen := map[string]bool{}
		done := make(chan struct{})
		c, err := rocketmq.NewPushConsumer(
			consumer.WithNsResolver(resolver),
			consumer.WithGroupName(*group),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
			consumer.WithCredentials(creds),
		)
		if err != nil {
			fail("consumer: %v", err)
		}
		err = c.Subscribe(*topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				body := string(m.Body)
				if strings.HasPrefix(body, *prefix+"-") && !seen[body] {
					seen[body] = true
					fmt.Printf("RECV %s\n", body)
					if len(seen) == *count {
						close(done)
					}
				}
			}
			return consumer.ConsumeSuccess, nil
		})
		if err != nil {
			fail("subscribe: %v", err)
		}
		if err := c.Start(); err != nil {
			fail("consumer start: %v", err)
		}
		select {
		case <-done:
		case <-ctx.Done():
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			fail("received %d of %d messages before the timeout", n, *count)
		}
		_ = c.Shutdown()
	default:
		fail("unknown subcommand %q", os.Args[1])
	}
	fmt.Println("OK")
}

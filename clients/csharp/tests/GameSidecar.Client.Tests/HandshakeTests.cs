using System;
using GameSidecar.Client;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public class HandshakeTests
    {
        [Fact]
        public void ParsesAUnixHandshake()
        {
            var h = Handshake.Parse("{\"sidecar\":\"game-sidecar\",\"protocol\":1,\"transport\":\"unix\",\"address\":\"/tmp/x y/sidecar.sock\",\"token\":\"t\\u00e9\",\"pid\":4242,\"version\":\"0.1.0\"}");
            Assert.True(h.IsUnix);
            Assert.Equal("/tmp/x y/sidecar.sock", h.Address);
            Assert.Equal("unix:/tmp/x y/sidecar.sock", h.Target);
            Assert.Equal("t\u00e9", h.Token);
            Assert.Equal(4242, h.Pid);
            Assert.Equal("0.1.0", h.Version);
        }

        [Fact]
        public void TcpHandshakeWithoutTokenAndWithUnknownNestedFields()
        {
            var h = Handshake.Parse(" {\"sidecar\":\"game-sidecar\",\"extra\":{\"a\":[1,{\"b\":\"}\"}]},\"protocol\":1,\"transport\":\"tcp\",\"address\":\"127.0.0.1:5000\",\"pid\":1,\"version\":\"9\",\"flag\":true} ");
            Assert.False(h.IsUnix);
            Assert.Equal("127.0.0.1:5000", h.Target);
            Assert.Null(h.Token);
        }

        [Theory]
        [InlineData("this is not json", "not JSON")]
        [InlineData("{\"sidecar\":\"game-sidecar\"", "not JSON")]
        [InlineData("{\"sidecar\":\"other\",\"protocol\":1,\"transport\":\"tcp\",\"address\":\"x\"}", "not a game-sidecar handshake")]
        [InlineData("{\"sidecar\":\"game-sidecar\",\"protocol\":2,\"transport\":\"tcp\",\"address\":\"x\"}", "unsupported protocol 2")]
        [InlineData("{\"sidecar\":\"game-sidecar\",\"transport\":\"tcp\",\"address\":\"x\"}", "unsupported protocol (missing)")]
        [InlineData("{\"sidecar\":\"game-sidecar\",\"protocol\":1,\"transport\":\"pipe\",\"address\":\"x\"}", "transport must be unix or tcp")]
        [InlineData("{\"sidecar\":\"game-sidecar\",\"protocol\":1,\"transport\":\"unix\"}", "transport must be unix or tcp")]
        [InlineData("{\"sidecar\":\"game-sidecar\",\"protocol\":1} trailing", "not JSON")]
        public void RefusesWhatIsNotAProtocol1Handshake(string line, string why)
        {
            var e = Assert.Throws<FormatException>(() => Handshake.Parse(line));
            Assert.Contains(why, e.Message);
        }
    }
}

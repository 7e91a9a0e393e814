"""The reviewer-session providers this plugin ships: claude, codex, opencode, kimi and exec."""

// Passwords of ten characters or more that lead the public lists of leaked
// passwords (the "top 10,000" lists drawn from breach corpora, filtered to
// what the length rule would let through). A guesser tries these first, so the
// sign-in limits would not save an account that used one. Compared lower-cased
// with spaces removed, so "Password123" and "pass word 123" count too.
// Kept small on purpose: a list is the floor, the length rule does the rest.
export const COMMON_PASSWORDS: ReadonlySet<string> = new Set([
  '1234567890', '0123456789', '0987654321', '9876543210', '12345678910', '123456789a', 'a123456789',
  '1234567890a', '1234567891', '1111111111', '0000000000', '1212121212', '1122334455', '1q2w3e4r5t',
  '1q2w3e4r5t6y', 'q1w2e3r4t5', 'qwertyuiop', 'qwerty1234', 'qwerty12345', 'qwerty123456', 'qwertyuiop1',
  'asdfghjkl1', 'asdfghjkl;', 'zxcvbnm123', '1qaz2wsx3edc', 'qazwsxedc1', 'qazwsxedcrfv', '1qazxsw23edc',
  'password12', 'password123', 'password1234', 'password12345', 'password123456', 'passw0rd123', 'p@ssw0rd123',
  'p@ssword123', 'passwordpassword', 'mypassword', 'mypassword1', 'thisismypassword', 'changeme123', 'changeme1234',
  'letmein123', 'letmein1234', 'welcome123', 'welcome1234', 'welcome2024', 'welcome2025', 'welcome2026',
  'iloveyou12', 'iloveyou123', 'iloveyou1234', 'princess12', 'princess123', 'sunshine12', 'sunshine123',
  'football12', 'football123', 'baseball12', 'baseball123', 'basketball', 'basketball1', 'superman123',
  'starwars123', 'michael123', 'jennifer123', 'liverpool1', 'liverpool123', 'chelsea123', 'arsenal123',
  'manchester', 'manchester1', 'monkey1234', 'dragon1234', 'master1234', 'shadow1234', 'abcdefghij',
  'abcdefg123', 'abcd123456', 'abc1234567', 'abcdef1234', 'aaaaaaaaaa', 'computer12', 'computer123',
  'administrator', 'admin12345', 'admin123456', 'adminadmin', 'administrator1', 'rootroot12', 'qwertyqwerty',
  'trustno1234', 'whatever123', 'internet123', 'spring2024', 'summer2024', 'autumn2024', 'winter2024',
  'spring2025', 'summer2025', 'autumn2025', 'winter2025', 'spring2026', 'summer2026', 'autumn2026', 'winter2026',
  'herald1234', 'herald12345', 'heraldpassword', 'pushnotifications', 'notifications', 'correcthorsebatterystaple',
])
